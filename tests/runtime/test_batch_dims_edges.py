"""Declared batch dims at their edges, with real compiled kernels (g++, Numba) against NumPy.

A kernel that declares ``num_batch_dims = k`` is promised operands and results that share
their first ``k`` dims (it may loop over ``x.numel()`` and read ``w`` as far). So an operand
whose batch dim is 1 is broadcast over the batch before the kernel sees it, at the call and
under every ``vmap_method`` (``"expand_dims"`` used to hand the kernel a size-1 batch dim:
it read 96 elements of a 32-element buffer). The kernels here check the sizes they are given
(``BE_CHECK``), so a broken promise is an error, not a silent read past a buffer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import pytest

import brainevent
from brainevent.errors import KernelCallError

SOURCE = r"""
#include "brainevent/common.h"
// @BE axpw arg arg ret
void axpw(const BE::Tensor x, const BE::Tensor w, BE::Tensor out) {
  BE_CHECK(w.numel() == x.numel() && out.numel() == x.numel())
      << "x has " << x.numel() << " elements, w " << w.numel() << ", out " << out.numel();
  const float* px = x.data_ptr<float>();
  const float* pw = w.data_ptr<float>();
  float* po = out.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) po[i] = 0.5f * px[i] + pw[i];
}
"""

SHAPE = (4, 2, 8)  # k=1: a batch of 4; k=2: a batch of 4 x 2
BATCH = 3  # what vmap adds
METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all")
PRIMITIVE_METHODS = ("sequential", "expand_dims", "broadcast_all")
# in_axes of vmap over (x, w), and where the batched operands carry the batch
IN_AXES = [(0, None), (None, 0), (0, 0), (1, None)]


@pytest.fixture(scope="module")
def mod() -> brainevent.CompiledModule:
    return brainevent.load_cpp_inline(name="batch_dims_edges", cpp_sources=SOURCE)


def _numba_axpw() -> Any:
    numba = pytest.importorskip("numba")

    @numba.njit
    def axpw(x: Any, w: Any, out: Any) -> None:
        if w.size != x.size or out.size != x.size:
            raise ValueError("operands of different sizes")
        xf, wf, of = x.ravel(), w.ravel(), out.ravel()
        for i in range(xf.size):
            of[i] = 0.5 * xf[i] + wf[i]

    return axpw


def module_function(mod: brainevent.CompiledModule, k: int, method: str) -> Callable[..., Any]:
    import copy

    f = copy.copy(mod.axpw)
    f.num_batch_dims, f.vmap_method = k, method
    return f  # type: ignore[no-any-return]


_primitives: dict[tuple[str, int, str], Callable[..., Any]] = {}


def primitive(backend: str, mod: brainevent.CompiledModule, k: int, method: str) -> Callable[..., Any]:
    """An XLACustomKernel over ``axpw`` (one per settings: a name is registered once)."""
    if (backend, k, method) not in _primitives:
        _primitives[backend, k, method] = _make_primitive(backend, mod, k, method)
    return _primitives[backend, k, method]


def _make_primitive(backend: str, mod: brainevent.CompiledModule, k: int, method: str) -> Callable[..., Any]:
    op = brainevent.XLACustomKernel(
        f"batch_edges_{backend}_{k}_{method}", num_batch_dims=k, vmap_method=method
    )
    if backend == "cpp":
        op.def_kernel("cpu", mod.axpw)
    else:
        op.def_numba_kernel(_numba_axpw())
    return lambda x, w: op(x, w, outs=jax.ShapeDtypeStruct(np.broadcast_shapes(x.shape, w.shape), x.dtype))


def data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    x = np.arange(np.prod(SHAPE), dtype=np.float32).reshape(SHAPE) / 8
    w = np.cos(np.arange(np.prod(SHAPE), dtype=np.float32)).reshape(SHAPE)
    xs = np.stack([x + b for b in range(BATCH)])
    ws = np.stack([w * (b + 1) for b in range(BATCH)])
    return x, w, xs, ws


def vmapped_operands(in_axes: tuple[int | None, int | None]) -> tuple[Any, Any, np.ndarray]:
    """The operands for ``jax.vmap(f, in_axes)`` and NumPy's result (batch first)."""
    x, w, xs, ws = data()
    a = {None: x, 0: xs, 1: np.moveaxis(xs, 0, 1)}[in_axes[0]]
    b = {None: w, 0: ws, 1: np.moveaxis(ws, 0, 1)}[in_axes[1]]
    want = 0.5 * (x if in_axes[0] is None else xs) + (w if in_axes[1] is None else ws)
    return a, b, np.broadcast_to(want, (BATCH, *SHAPE))


@pytest.mark.parametrize("in_axes", IN_AXES, ids=str)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("k", [1, 2])
def test_vmap_of_a_module_function_with_batch_dims(
    mod: brainevent.CompiledModule, k: int, method: str, in_axes: tuple[int | None, int | None]
) -> None:
    a, b, want = vmapped_operands(in_axes)
    f = module_function(mod, k, method)
    got = jax.jit(jax.vmap(f, in_axes=in_axes))(a, b)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


@pytest.mark.parametrize("in_axes", IN_AXES, ids=str)
@pytest.mark.parametrize("method", PRIMITIVE_METHODS)
@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("backend", ["cpp", "numba"])
def test_vmap_of_an_xla_custom_kernel_with_batch_dims(
    mod: brainevent.CompiledModule, backend: str, k: int, method: str, in_axes: tuple[int | None, int | None]
) -> None:
    a, b, want = vmapped_operands(in_axes)
    f = primitive(backend, mod, k, method)
    got = jax.jit(jax.vmap(f, in_axes=in_axes))(a, b)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


@pytest.mark.parametrize("method", METHODS)
def test_nested_vmap_keeps_the_promise(mod: brainevent.CompiledModule, method: str) -> None:
    _, _, xs, ws = data()
    f = module_function(mod, 1, method)
    got = jax.jit(jax.vmap(jax.vmap(f, in_axes=(0, None)), in_axes=(None, 0)))(xs, ws)
    want = 0.5 * xs[None] + ws[:, None]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


# Shapes of (x, w) whose batch dims broadcast (k=1, then k=2), the batch first.
BROADCASTS = [
    (1, (8, 16), (1, 16)),
    (1, (1, 16), (8, 16)),
    (2, (2, 4, 16), (1, 4, 16)),
    (2, (2, 4, 16), (2, 1, 16)),
    (2, (2, 4, 16), (1, 1, 16)),
    (2, (1, 4, 16), (2, 1, 16)),
]


def _broadcast_case(xshape: tuple[int, ...], wshape: tuple[int, ...]) -> tuple[Any, Any, Any, Any]:
    x = np.arange(np.prod(xshape), dtype=np.float32).reshape(xshape)
    w = np.sin(np.arange(np.prod(wshape), dtype=np.float32)).reshape(wshape)
    want = 0.5 * x + w
    return x, w, want, jax.ShapeDtypeStruct(want.shape, np.float32)


@pytest.mark.parametrize(("k", "xshape", "wshape"), BROADCASTS)
def test_an_operand_whose_batch_dim_is_1_is_broadcast(
    mod: brainevent.CompiledModule, k: int, xshape: tuple[int, ...], wshape: tuple[int, ...]
) -> None:
    x, w, want, out = _broadcast_case(xshape, wshape)
    f = module_function(mod, k, "sequential")
    np.testing.assert_allclose(np.asarray(f(x, w, outs=out)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.jit(lambda p, q: f(p, q, outs=out))(x, w)), want, rtol=1e-6)
    for backend in ("cpp", "numba"):
        g = primitive(backend, mod, k, "sequential")
        np.testing.assert_allclose(np.asarray(jax.jit(g)(x, w)), want, rtol=1e-6)


@pytest.mark.parametrize(
    ("xshape", "wshape", "outshape", "words"),
    [
        ((8, 16), (4, 16), (8, 16), "(8, 16), (4, 16)"),  # 8 against 4: no broadcast
        ((8, 16), (1, 16), (1, 16), "result"),  # a result must have the whole batch
        ((8, 16), (16,), (8, 16), "(16,)"),  # too few dims
    ],
)
def test_batch_dims_that_do_not_broadcast_are_refused(
    mod: brainevent.CompiledModule,
    xshape: tuple[int, ...],
    wshape: tuple[int, ...],
    outshape: tuple[int, ...],
    words: str,
) -> None:
    f = module_function(mod, 1, "sequential")
    x, w = np.ones(xshape, np.float32), np.ones(wshape, np.float32)
    with pytest.raises(KernelCallError, match="num_batch_dims=1") as info:
        f(x, w, outs=jax.ShapeDtypeStruct(outshape, np.float32))
    assert words in str(info.value), str(info.value)
