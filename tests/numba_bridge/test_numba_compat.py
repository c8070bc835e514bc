"""Numba-bridge behaviour that code written for brainevent 0.2.1 relies on (CPU-runnable parts).

The GPU parts (per-element launches under vmap, nested vmap, zero fill on the device) are in
tests/numba_bridge/test_numba_cuda_gpu.py.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent

numba = pytest.importorskip("numba")

OUT8 = jax.ShapeDtypeStruct((8,), jnp.float32)


# ------------------------------------------------------------------ numba_kernel raising


@numba.njit
def _checked_double(x, out):
    for i in range(x.size):
        if x[i] < 0:
            raise ValueError("negative input to checked_double")
        out[i] = 2 * x[i]


def test_a_raising_numba_kernel_surfaces_its_message() -> None:
    f = brainevent.numba_kernel(_checked_double, outs=OUT8)
    np.testing.assert_array_equal(f(jnp.arange(8, dtype=jnp.float32)), np.arange(8) * 2)
    bad = jnp.arange(8, dtype=jnp.float32) - 3
    # JAX raises a ValueError eagerly and a JaxRuntimeError from a compiled call.
    with pytest.raises((ValueError, RuntimeError), match="_checked_double raised ValueError: negative input"):
        jax.block_until_ready(f(bad))
    with pytest.raises((ValueError, RuntimeError), match="negative input to checked_double"):
        jax.block_until_ready(jax.jit(f)(bad))
    # The process and the kernel are fine afterwards.
    np.testing.assert_array_equal(jax.jit(f)(jnp.ones(8, jnp.float32)), np.full(8, 2.0))


def test_exceptions_of_other_cfuncs_go_to_the_previous_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    import ctypes

    from brainevent.launchers import numba_cpu as cpu_errors

    f = brainevent.numba_kernel(_checked_double, outs=OUT8)
    jax.block_until_ready(f(jnp.ones(8, jnp.float32)))  # the hook is installed by now
    seen: list[str] = []
    monkeypatch.setattr(cpu_errors, "_previous", lambda u: seen.append(f"{type(u.exc_value).__name__}"))
    monkeypatch.setattr("sys.unraisablehook", cpu_errors._hook)

    @numba.njit
    def boom(x):
        if x > 0:
            raise KeyError("not ours")

    @numba.cfunc(numba.types.int32(numba.types.int64))
    def foreign(x):
        boom(x)
        return 1

    entry = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64)(foreign.address)
    assert entry(1) == 0  # Numba's cfunc wrapper reports and returns 0
    assert seen == ["KeyError"]  # not inside one of our handlers: passed on, not kept


# ------------------------------------------------------------- numba_cuda_kernel, no GPU


@pytest.fixture(scope="module")
def cuda():  # type: ignore[no-untyped-def]
    return pytest.importorskip("numba.cuda")


@pytest.fixture(scope="module")
def add_kernel(cuda):  # type: ignore[no-untyped-def]
    @cuda.jit
    def add_kernel(x, y, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] + y[i]

    return add_kernel


def _not_a_kernel(x, out):  # a plain function: launch-configuration errors come first
    pass


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({}, "launch configuration is required"),
        ({"grid": 4}, "block is missing"),
        ({"block": 256}, "grid is missing"),
        ({"grid": 4, "block": 256, "launch_dims": 1024}, "not both"),
        ({"grid": 4, "block": 256, "vmap_method": "expand_dims"}, "needs launch_dims"),
        ({"grid": 4, "block": 256, "vmap_method": "broadcast_all"}, "needs launch_dims"),
        ({"launch_dims": -1}, "non-negative"),
        ({"launch_dims": 8, "vmap_method": "loop"}, "vmap_method must be one of"),
    ],
)
def test_launch_errors_come_before_the_kernel_check(config: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        brainevent.numba_cuda_kernel(_not_a_kernel, outs=OUT8, **config)


def test_bfloat16_output_is_refused_before_the_kernel_check() -> None:
    with pytest.raises(ValueError, match="output 0 is bfloat16"):
        brainevent.numba_cuda_kernel(
            _not_a_kernel, outs=jax.ShapeDtypeStruct((8,), jnp.bfloat16), launch_dims=8
        )


def test_then_a_non_kernel_is_both_type_and_assertion_error(cuda) -> None:  # type: ignore[no-untyped-def]
    for expected in (TypeError, AssertionError, brainevent.KernelTypeError):
        with pytest.raises(expected, match="CUDADispatcher"):
            brainevent.numba_cuda_kernel(_not_a_kernel, outs=OUT8, launch_dims=8)


def test_launch_dims_with_a_batching_vmap_method_is_accepted(add_kernel) -> None:  # type: ignore[no-untyped-def]
    for method in ("expand_dims", "broadcast_all", "sequential"):
        assert callable(
            brainevent.numba_cuda_kernel(add_kernel, outs=OUT8, launch_dims=8, vmap_method=method)
        )
    assert callable(
        brainevent.numba_cuda_kernel(add_kernel, outs=OUT8, grid=1, block=8, vmap_method="sequential")
    )


def test_launch_dims_zero_returns_zeros_without_launching(add_kernel) -> None:  # type: ignore[no-untyped-def]
    # No GPU is needed: nothing is compiled or launched.
    f = brainevent.numba_cuda_kernel(add_kernel, outs=OUT8, launch_dims=0, input_output_aliases={0: 0})
    x = jnp.arange(1, 9, dtype=jnp.float32)
    np.testing.assert_array_equal(f(x, x), np.zeros(8))
    np.testing.assert_array_equal(jax.jit(f)(x, x), np.zeros(8))
    g = brainevent.numba_cuda_kernel(add_kernel, outs=OUT8, grid=(0,), block=(128,))
    np.testing.assert_array_equal(g(x, x), np.zeros(8))


def test_empty_outputs_return_empty_arrays_without_launching(add_kernel) -> None:  # type: ignore[no-untyped-def]
    f = brainevent.numba_cuda_kernel(
        add_kernel, outs=jax.ShapeDtypeStruct((0,), jnp.float32), launch_dims=128
    )
    empty = jnp.zeros((0,), jnp.float32)
    out = jax.jit(f)(empty, empty)
    assert out.shape == (0,) and out.dtype == jnp.float32
    with pytest.raises(TypeError, match="must be an array"):
        f(empty, [1.0])


def test_zero_d_and_bfloat16_inputs_are_refused_when_called(add_kernel) -> None:  # type: ignore[no-untyped-def]
    f = brainevent.numba_cuda_kernel(add_kernel, outs=OUT8, launch_dims=8)
    with pytest.raises(ValueError, match=r"input 1 is a 0-d array.*jnp.atleast_1d"):
        f(jnp.ones(8, jnp.float32), jnp.asarray(3.0, jnp.float32))
    with pytest.raises(ValueError, match="input 0 is bfloat16"):
        f(jnp.ones(8, jnp.bfloat16), jnp.ones(8, jnp.float32))
