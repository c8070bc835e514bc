"""numba_cuda_kernel on a real GPU: the seed's examples verbatim, vmap, loops, devices, graphs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent import numba_cuda_kernel
from brainevent.runtime.registry import registered_targets
from tests.support.kernels import CUDA_VECTOR_ADD as CUDA_ADD

pytestmark = pytest.mark.gpu
cuda = pytest.importorskip("numba.cuda")


def test_seed_option_1_and_option_2_verbatim() -> None:
    # The seed's imports, in the seed's order.
    from numba import cuda  # noqa: I001
    import jax
    import jax.numpy as jnp

    @cuda.jit
    def add_kernel(x, y, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] + y[i]

    # Option 1: Explicit grid/block
    kernel_fn = numba_cuda_kernel(
        add_kernel,
        outs=jax.ShapeDtypeStruct((1024,), jnp.float32),
        grid=4,
        block=256,
    )
    a = jnp.arange(1024, dtype=jnp.float32)
    b = jnp.full(1024, 2.5, dtype=jnp.float32)
    np.testing.assert_array_equal(np.asarray(jax.jit(kernel_fn)(a, b)), np.asarray(a) + 2.5)

    # Option 2: Auto grid from launch_dims
    kernel_fn = numba_cuda_kernel(
        add_kernel,
        outs=jax.ShapeDtypeStruct((1024,), jnp.float32),
        launch_dims=1024,
    )

    @jax.jit
    def f(a, b):
        return kernel_fn(a, b)

    np.testing.assert_array_equal(np.asarray(f(a, b)), np.asarray(a) + 2.5)
    np.testing.assert_array_equal(np.asarray(kernel_fn(a, b)), np.asarray(a) + 2.5)  # eager


@cuda.jit
def add_kernel(x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] + y[i]


@cuda.jit
def reverse_kernel(x, out):
    # Each element depends on another of the same row: wrong if rows of a batch ran together.
    i = cuda.grid(1)
    n = out.size
    if i < n:
        out[i] = x[n - 1 - i]


@cuda.jit
def split_2d(x, lo, hi):
    i, j = cuda.grid(2)
    if i < x.shape[0] and j < x.shape[1]:
        lo[i, j] = min(x[i, j], 0.0)
        hi[i, j] = max(x[i, j], 0.0)


@cuda.jit
def accumulate(x, acc, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = acc[i] + x[i]


def spec(shape: tuple[int, ...], dtype: object = jnp.float32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


def test_vmap_sequential() -> None:
    f = numba_cuda_kernel(add_kernel, outs=spec((1024,)), launch_dims=1024, vmap_method="sequential")
    a = jnp.arange(4 * 1024, dtype=jnp.float32).reshape(4, 1024)
    out = jax.jit(jax.vmap(f, in_axes=(0, None)))(a, jnp.ones(1024, jnp.float32))
    np.testing.assert_array_equal(np.asarray(out), np.asarray(a) + 1)


@pytest.mark.parametrize("method", ["broadcast_all", "expand_dims"])
def test_vmap_batching_methods_launch_the_unbatched_kernel_per_element(method: str) -> None:
    # As in 0.2.1: launch_dims stays the unbatched size and every batch element is computed.
    f = numba_cuda_kernel(add_kernel, outs=spec((1024,)), launch_dims=1024, vmap_method=method)
    a = jnp.arange(4 * 1024, dtype=jnp.float32).reshape(4, 1024)
    b = jnp.arange(1024, dtype=jnp.float32)
    out = jax.jit(jax.vmap(f, in_axes=(0, None)))(a, b)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(a) + np.asarray(b))
    both = jax.vmap(f)(a, a)
    np.testing.assert_array_equal(np.asarray(both), 2 * np.asarray(a))
    one = jax.vmap(f)(a[:1], a[:1])  # a batch of one is still a batch
    assert one.shape == (1, 1024)
    np.testing.assert_array_equal(np.asarray(one), 2 * np.asarray(a[:1]))
    r = numba_cuda_kernel(reverse_kernel, outs=spec((4,)), launch_dims=4, vmap_method=method)
    rows = jnp.arange(16, dtype=jnp.float32).reshape(4, 4)
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(r))(rows)), np.asarray(rows)[:, ::-1])


def test_nested_vmap_computes_every_element() -> None:
    f = numba_cuda_kernel(add_kernel, outs=spec((8,)), launch_dims=8, vmap_method="expand_dims")
    x = jnp.arange(2 * 3 * 8, dtype=jnp.float32).reshape(2, 3, 8)
    out = jax.jit(jax.vmap(jax.vmap(f)))(x, jnp.ones_like(x))
    np.testing.assert_array_equal(np.asarray(out), np.asarray(x) + 1)


def test_launch_dims_zero_zero_fills_even_an_aliased_output() -> None:
    f = numba_cuda_kernel(add_kernel, outs=spec((128,)), launch_dims=0, input_output_aliases={0: 0})
    x = jnp.arange(1, 129, dtype=jnp.float32)
    np.testing.assert_array_equal(np.asarray(jax.jit(f)(x, x)), np.zeros(128))
    empty = numba_cuda_kernel(add_kernel, outs=spec((0,)), launch_dims=0)
    none = jnp.zeros((0,), jnp.float32)
    assert jax.jit(empty)(none, none).shape == (0,)


def test_float16_round_trips() -> None:
    @cuda.jit
    def copy(x, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i]

    f = numba_cuda_kernel(copy, outs=spec((256,), jnp.float16), launch_dims=256)
    x = jnp.arange(256, dtype=jnp.float16)
    np.testing.assert_array_equal(np.asarray(jax.jit(f)(x)), np.arange(256, dtype=np.float16))


def test_fori_loop_1000_steps() -> None:
    f = numba_cuda_kernel(add_kernel, outs=spec((1024,)), launch_dims=1024)

    @jax.jit
    def run(x: jax.Array) -> jax.Array:
        return jax.lax.fori_loop(0, 1000, lambda i, acc: f(acc, x), jnp.zeros(1024, jnp.float32))

    np.testing.assert_array_equal(np.asarray(run(jnp.full(1024, 0.5, jnp.float32))), np.full(1024, 500.0))


def test_multiple_outputs_2d_launch_and_pytree_outs() -> None:
    x = np.random.default_rng(0).normal(size=(100, 70)).astype(np.float32)
    f = numba_cuda_kernel(split_2d, outs=[spec((100, 70)), spec((100, 70))], launch_dims=(100, 70))
    lo, hi = jax.jit(f)(jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(lo), np.minimum(x, 0))
    np.testing.assert_array_equal(np.asarray(hi), np.maximum(x, 0))


def test_input_output_aliases_and_float64_int32() -> None:
    f = numba_cuda_kernel(accumulate, outs=spec((1000,)), launch_dims=1000, input_output_aliases={1: 0})
    out = jax.jit(f)(jnp.ones(1000, jnp.float32), jnp.arange(1000, dtype=jnp.float32))
    np.testing.assert_array_equal(np.asarray(out), np.arange(1000) + 1.0)
    g = numba_cuda_kernel(add_kernel, outs=spec((300,), jnp.int32), grid=(2,), block=(256,))
    ints = jnp.arange(300, dtype=jnp.int32)
    np.testing.assert_array_equal(np.asarray(g(ints, ints)), np.arange(300) * 2)


def test_every_gpu() -> None:
    f = jax.jit(numba_cuda_kernel(add_kernel, outs=spec((1024,)), launch_dims=1024))
    for device in jax.devices("gpu"):
        a = jax.device_put(jnp.arange(1024, dtype=jnp.float32), device)
        b = jax.device_put(jnp.full(1024, float(device.id + 1), jnp.float32), device)
        out = f(a, b)
        assert out.devices() == {device}
        np.testing.assert_array_equal(np.asarray(out), np.arange(1024) + device.id + 1.0)


def test_recreated_wrappers_register_nothing_new() -> None:
    a = jnp.ones(1024, jnp.float32)
    numba_cuda_kernel(add_kernel, outs=spec((1024,)), launch_dims=1024)(a, a)
    before = dict(registered_targets())
    for _ in range(5):
        f = numba_cuda_kernel(add_kernel, outs=spec((1024,)), launch_dims=1024)
        np.testing.assert_array_equal(np.asarray(jax.jit(f)(a, a)), np.full(1024, 2.0))
    assert registered_targets() == before


GRAPH_SCRIPT = textwrap.dedent(
    """
    import brainevent
    assert brainevent.enable_cuda_graphs()
    import jax, jax.numpy as jnp, numpy as np
    from numba import cuda

    @cuda.jit
    def add_kernel(x, y, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] + y[i]

    f = brainevent.numba_cuda_kernel(add_kernel, outs=jax.ShapeDtypeStruct((1024,), jnp.float32),
                                     launch_dims=1024)
    run = jax.jit(lambda x: jax.lax.fori_loop(0, 1000, lambda i, a: f(a, x), jnp.zeros(1024, jnp.float32)))
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(run(jnp.ones(1024, jnp.float32))), np.full(1024, 1000.0))
    print("graphs-ok")
    """
)


def test_under_cuda_graph_flags_in_a_fresh_process() -> None:
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")  # the parent holds most memory
    out = subprocess.run(
        [sys.executable, "-c", GRAPH_SCRIPT], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "graphs-ok" in out.stdout


def test_numba_cuda_kernel_and_load_cuda_inline_agree() -> None:
    """The same add through both paths, per jitted call and in a 1000-step loop.

    Their per-call and per-step costs are compared by benchmarks/bench_cuda.py.
    """
    brainevent.load_cuda_inline(name="numba_bench_add", cuda_sources=CUDA_ADD)
    compiled = jax.ffi.ffi_call("numba_bench_add.vector_add", spec((1024,)))
    bridged = numba_cuda_kernel(add_kernel, outs=spec((1024,)), launch_dims=1024)
    a = jnp.arange(1024, dtype=jnp.float32)
    b = jnp.full(1024, 0.5, jnp.float32)
    for fn in (compiled, bridged):
        np.testing.assert_array_equal(np.asarray(jax.jit(fn)(a, b)), np.arange(1024) + 0.5)
        loop = jax.jit(lambda x, fn=fn: jax.lax.fori_loop(0, 1000, lambda i, acc: fn(acc, x), x))
        np.testing.assert_array_equal(np.asarray(loop(b)), np.full(1024, 500.5))


@cuda.jit
def histogram_kernel(x, counts):
    # Accumulates into `counts`: it must start at zero (zeros=).
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(counts, x[i], 1)


def test_a_zeroed_histogram_starts_from_zero_under_jit_and_vmap() -> None:
    bins, n = 7, 1000
    x = np.random.default_rng(0).integers(0, bins, size=(3, n)).astype(np.int32)
    expected = np.stack([np.bincount(row, minlength=bins) for row in x]).astype(np.int32)
    f = numba_cuda_kernel(
        histogram_kernel, spec((bins,), jnp.int32), launch_dims=n, zeros=0, vmap_method="sequential"
    )
    twice = jax.jit(lambda v: f(v) + f(v))
    for _ in range(3):  # the same buffers again: each call starts from zero
        np.testing.assert_array_equal(np.asarray(twice(x[0])), 2 * expected[0])
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(f))(x)), expected)
