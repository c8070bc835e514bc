"""``brainevent.differentiable``: a kernel differentiated by kernels, checked against ``jax.grad``
of the same function written in ``jax.numpy``; and our errors where a derivative is missing.

Several host devices under ``shard_map`` (and every kernel kind) are cells of the conformance
matrix (tests/conformance, ``paired_*``)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

import brainevent
from brainevent.errors import KernelCallError

# f(x, w) = x * x * w, with its VJP, its JVP, and a forward pass that saves other residuals.
SOURCE = r"""
#include "brainevent/common.h"
// @BE f arg arg ret
void f(const BE::Tensor x, const BE::Tensor w, BE::Tensor out) {
  const float* px = x.data_ptr<float>(); const float* pw = w.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = px[i] * px[i] * pw[i];
}
// @BE f_bwd arg arg arg ret ret
void f_bwd(const BE::Tensor x, const BE::Tensor w, const BE::Tensor g, BE::Tensor dx, BE::Tensor dw) {
  const float* px = x.data_ptr<float>();
  const float* pw = w.data_ptr<float>();
  const float* pg = g.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    dx.data_ptr<float>()[i] = 2 * px[i] * pw[i] * pg[i];
    dw.data_ptr<float>()[i] = px[i] * px[i] * pg[i];
  }
}
// @BE f_jvp arg arg arg arg ret
void f_jvp(const BE::Tensor x, const BE::Tensor w, const BE::Tensor tx, const BE::Tensor tw, BE::Tensor out) {
  const float* px = x.data_ptr<float>(); const float* pw = w.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float dx = tx.data_ptr<float>()[i], dw = tw.data_ptr<float>()[i];
    out.data_ptr<float>()[i] = 2 * px[i] * pw[i] * dx + px[i] * px[i] * dw;
  }
}
// The forward pass keeps 2xw and x*x, what the backward pass multiplies the cotangent by.
// @BE f_fwd arg arg ret ret ret
void f_fwd(const BE::Tensor x, const BE::Tensor w, BE::Tensor out, BE::Tensor two_xw, BE::Tensor xx) {
  const float* px = x.data_ptr<float>(); const float* pw = w.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    xx.data_ptr<float>()[i] = px[i] * px[i];
    two_xw.data_ptr<float>()[i] = 2 * px[i] * pw[i];
    out.data_ptr<float>()[i] = px[i] * px[i] * pw[i];
  }
}
// @BE times arg arg ret
void times(const BE::Tensor a, const BE::Tensor b, BE::Tensor out) {
  const float* pa = a.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  for (int64_t i = 0; i < a.numel(); ++i) out.data_ptr<float>()[i] = pa[i] * pb[i];
}
// @BE scaled arg ret attr.scale:float32
void scaled(const BE::Tensor x, BE::Tensor out, float scale) {
  for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = scale * x.data_ptr<float>()[i];
}
// Two results: x*x and 3x.
// @BE two arg ret ret
void two(const BE::Tensor x, BE::Tensor sq, BE::Tensor thrice) {
  for (int64_t i = 0; i < x.numel(); ++i) {
    sq.data_ptr<float>()[i] = x.data_ptr<float>()[i] * x.data_ptr<float>()[i];
    thrice.data_ptr<float>()[i] = 3 * x.data_ptr<float>()[i];
  }
}
// @BE two_bwd arg arg arg ret
void two_bwd(const BE::Tensor x, const BE::Tensor g_sq, const BE::Tensor g_thrice, BE::Tensor dx) {
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float a = x.data_ptr<float>()[i], g1 = g_sq.data_ptr<float>()[i];
    const float g3 = g_thrice.data_ptr<float>()[i];
    dx.data_ptr<float>()[i] = 2 * a * g1 + 3 * g3;
  }
}
// An integer input, which has no derivative: x * k.
// @BE by_int arg arg ret
void by_int(const BE::Tensor x, const BE::Tensor k, BE::Tensor out) {
  const int32_t* pk = k.data_ptr<int32_t>();
  for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i] * pk[i];
}
"""


@pytest.fixture(scope="module")
def mod() -> Any:
    module = brainevent.load_cpp_inline(name="autodiff_pairs", cpp_sources=SOURCE)
    for name in ("f", "f_bwd", "f_jvp", "f_fwd"):
        getattr(module, name).vmap_method = "sequential"
    return module


X = np.linspace(-1.5, 2.0, 12, dtype=np.float32).reshape(3, 4)
W = np.linspace(0.5, 1.5, 12, dtype=np.float32).reshape(3, 4)


def reference(x: Any, w: Any) -> Any:
    return x * x * w


def declared(mod: Any, how: str) -> Callable[..., Any]:
    if how == "vjp":
        return brainevent.differentiable(mod.f, vjp=mod.f_bwd)
    if how == "vjp_with_residuals":
        return brainevent.differentiable(mod.f, vjp=(mod.f_fwd, lambda two_xw, xx, g: (two_xw * g, xx * g)))
    if how == "jvp":
        return brainevent.differentiable(mod.f, jvp=mod.f_jvp)
    return brainevent.differentiable(mod.f, vjp=mod.f_bwd, jvp=mod.f_jvp)


def loss(f: Callable[..., Any]) -> Callable[..., Any]:
    return lambda x, w: (f(x, w) * jnp.cos(x)).sum()  # a cotangent that differs per element


def two_steps(f: Callable[..., Any]) -> Callable[..., Any]:
    return lambda x, w: jax.lax.scan(lambda c, _: (f(c, w) * 0.5, None), x, None, length=2)[0].sum()


def fori(f: Callable[..., Any]) -> Callable[..., Any]:
    return lambda x, w: jax.lax.fori_loop(0, 2, lambda i, c: f(c, w) * 0.5, x).sum()


def in_shard_map(f: Callable[..., Any]) -> Callable[..., Any]:
    mesh = Mesh(np.array(jax.devices()[:1]), ("b",))
    body = jax.shard_map(
        lambda x, w: f(x, w) * jnp.cos(x), mesh=mesh, in_specs=(P("b"), P()), out_specs=P("b")
    )
    return lambda x, w: body(x, w).sum()


# A transformation of a loss, as ``how(make_loss)(x, w)``.
REVERSE: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "grad": lambda f: jax.grad(loss(f), argnums=(0, 1)),
    "jit_grad": lambda f: jax.jit(jax.grad(loss(f), argnums=(0, 1))),
    "vjp": lambda f: lambda x, w: jax.vjp(f, x, w)[1](jnp.cos(x)),
    "vmap_grad": lambda f: (
        lambda x, w: jax.jit(jax.vmap(jax.grad(loss(f), argnums=(0, 1)), in_axes=(0, None)))(
            jnp.stack([x, x + 1]), w
        )
    ),
    "grad_vmap": lambda f: jax.grad(
        lambda x, w: jax.vmap(loss(f), in_axes=(0, None))(jnp.stack([x, 2 * x]), w).sum(), argnums=(0, 1)
    ),
    "scan_grad": lambda f: jax.jit(jax.grad(two_steps(f), argnums=(0, 1))),
    "fori_loop_grad": lambda f: jax.jit(jax.grad(fori(f), argnums=(0, 1))),
    "shard_map_grad": lambda f: jax.jit(jax.grad(in_shard_map(f), argnums=(0, 1))),
}


def assert_close(got: Any, want: Any) -> None:
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("transform", sorted(REVERSE))
@pytest.mark.parametrize("how", ["vjp", "vjp_with_residuals", "vjp_and_jvp"])
def test_reverse_mode_matches_jax_numpy(mod: Any, how: str, transform: str) -> None:
    make = REVERSE[transform]
    assert_close(make(declared(mod, how))(X, W), make(reference)(X, W))


FORWARD: dict[str, Callable[[Callable[..., Any]], Any]] = {
    "jvp": lambda f: jax.jvp(f, (X, W), (np.cos(X), W[::-1])),
    "jit_jvp": lambda f: jax.jit(lambda x, w: jax.jvp(f, (x, w), (jnp.cos(x), w[::-1])))(X, W),
    "vmap_jvp": lambda f: jax.vmap(lambda x: jax.jvp(f, (x, W), (jnp.cos(x), W[::-1])))(np.stack([X, X + 1])),
    "jvp_scan": lambda f: jax.jvp(lambda x: two_steps(f)(x, W), (X,), (np.cos(X),)),
}


@pytest.mark.parametrize("transform", sorted(FORWARD))
@pytest.mark.parametrize("how", ["jvp", "vjp_and_jvp"])
def test_forward_mode_matches_jax_numpy(mod: Any, how: str, transform: str) -> None:
    assert_close(FORWARD[transform](declared(mod, how)), FORWARD[transform](reference))


ATTEMPTS: dict[str, Callable[[Callable[..., Any]], Any]] = {
    "grad": lambda f: jax.grad(lambda x: f(x, W).sum())(X),
    "jit_grad": lambda f: jax.jit(jax.grad(lambda x: f(x, W).sum()))(X),
    "jvp": lambda f: jax.jvp(lambda x: f(x, W), (X,), (X,)),
}


@pytest.mark.parametrize("attempt", sorted(ATTEMPTS))
@pytest.mark.parametrize("batch_dims", [None, 1])
def test_a_kernel_without_derivatives_names_the_one_liner(
    mod: Any, attempt: str, batch_dims: int | None
) -> None:
    f = copy.copy(mod.f)
    f.num_batch_dims = batch_dims  # 1: a call through the batch-dims primitive says the same
    with pytest.raises(KernelCallError, match=r"autodiff_pairs\.f cannot be differentiated") as info:
        ATTEMPTS[attempt](f)
    assert "brainevent.differentiable(f, vjp=bwd, jvp=...)" in str(info.value)


def test_a_missing_mode_is_named(mod: Any) -> None:
    only_vjp, only_jvp = declared(mod, "vjp"), declared(mod, "jvp")
    with pytest.raises(
        KernelCallError, match=r"jax\.jvp \(forward mode\) needs a JVP.*declares only a VJP.*jvp="
    ):
        jax.jvp(lambda x: only_vjp(x, W), (X,), (X,))
    with pytest.raises(KernelCallError, match=r"forward mode"):
        jax.jit(lambda x: jax.jvp(lambda x: only_vjp(x, W), (x,), (x,)))(X)
    for attempt in (jax.grad(loss(only_jvp)), jax.jit(jax.grad(loss(only_jvp)))):
        with pytest.raises(KernelCallError, match=r"reverse mode\) need a VJP.*declares only a JVP.*vjp=bwd"):
            attempt(X, W)


def test_bad_declarations_are_named(mod: Any) -> None:
    with pytest.raises(KernelCallError, match=r"needs vjp=, jvp= or both"):
        brainevent.differentiable(mod.f)
    with pytest.raises(KernelCallError, match=r"vjp must be callable, got 3"):
        brainevent.differentiable(mod.f, vjp=3)  # type: ignore[arg-type]
    one = brainevent.differentiable(mod.f, vjp=lambda x, w, g: mod.times(g, w))  # one cotangent, two inputs
    with pytest.raises(KernelCallError, match=r"returned 1 cotangent\(s\) for 2 input\(s\); .*return 2"):
        jax.grad(loss(one))(X, W)


def test_keywords_reach_the_derivatives_but_outs_reaches_f_alone(mod: Any) -> None:
    scaled = brainevent.differentiable(
        mod.scaled,
        vjp=lambda x, g, scale: mod.scaled(g, scale=scale),
        jvp=lambda x, t, scale: mod.scaled(t, scale=scale),
    )
    spec = jax.ShapeDtypeStruct(X.shape, X.dtype)
    grad = jax.grad(lambda x: (scaled(x, scale=3.0, outs=spec) * x).sum())(X)
    assert_close(grad, 6 * X)  # d/dx of 3 x . x
    assert_close(jax.jvp(lambda x: scaled(x, scale=-2.0), (X,), (W,))[1], -2 * W)


def test_several_results_take_one_cotangent_each(mod: Any) -> None:
    two = brainevent.differentiable(mod.two, vjp=mod.two_bwd)
    got = jax.grad(lambda x: (two(x)[0] * jnp.sin(x) + two(x)[1] ** 2).sum())(X)
    want = jax.grad(lambda x: (x * x * jnp.sin(x) + (3 * x) ** 2).sum())(X)
    assert_close(got, want)


def test_an_integer_input_gets_no_cotangent(mod: Any) -> None:
    k = np.arange(12, dtype=np.int32).reshape(3, 4)
    by_int = brainevent.differentiable(
        mod.by_int,
        vjp=lambda x, k, g: (mod.by_int(g, k), None),
        jvp=lambda x, k, tx, tk: mod.by_int(tx, k),  # tk: zeros of k's dtype
    )
    assert_close(jax.grad(lambda x: (by_int(x, k) * x).sum())(X), 2 * X * k)
    assert_close(jax.jvp(lambda x: by_int(x, k), (X,), (W,))[1], W * k)


def test_an_xla_custom_kernel_without_rules(mod: Any) -> None:
    op = brainevent.XLACustomKernel("autodiff_no_rules").def_kernel("cpu", mod.f)
    spec = jax.ShapeDtypeStruct(X.shape, X.dtype)
    paired = brainevent.differentiable(op, vjp=mod.f_bwd)
    assert_close(
        jax.jit(jax.grad(loss(lambda x, w: paired(x, w, outs=spec)), argnums=(0, 1)))(X, W),
        jax.grad(loss(reference), argnums=(0, 1))(X, W),
    )


def test_numba_kernels_pair() -> None:
    numba = pytest.importorskip("numba")

    @numba.njit
    def cube(x: Any, out: Any) -> None:
        for i in range(x.size):
            out.flat[i] = x.flat[i] ** 3

    @numba.njit
    def cube_bwd(x: Any, g: Any, out: Any) -> None:
        for i in range(x.size):
            out.flat[i] = 3 * x.flat[i] ** 2 * g.flat[i]

    spec = jax.ShapeDtypeStruct(X.shape, X.dtype)
    f = brainevent.differentiable(
        brainevent.numba_kernel(cube, spec), vjp=brainevent.numba_kernel(cube_bwd, spec)
    )
    got = jax.jit(jax.grad(lambda x: (f(x) * jnp.cos(x)).sum()))(X)
    assert_close(got, jax.grad(lambda x: (x**3 * jnp.cos(x)).sum())(X))


# The same pair written for NVRTC (brainevent.cuda_kernel): y = x * x * w and its VJP.
NVRTC_PAIR = r"""
extern "C" __global__ void f(const float* x, const float* w, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * x[i] * w[i];
}
extern "C" __global__ void f_vjp(
    const float* x, const float* w, const float* g, float* dx, float* dw, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) { dx[i] = 2 * x[i] * w[i] * g[i]; dw[i] = x[i] * x[i] * g[i]; }
}
"""


@pytest.mark.gpu
@pytest.mark.host
def test_cuda_kernels_pair() -> None:
    spec = jax.ShapeDtypeStruct((1000,), jnp.float32)
    size = {"launch_dims": lambda *a: a[0].size, "n": lambda *a: a[0].size, "vmap_method": "sequential"}
    f = brainevent.differentiable(
        brainevent.cuda_kernel(NVRTC_PAIR, "f", spec, **size),
        vjp=brainevent.cuda_kernel(NVRTC_PAIR, "f_vjp", (spec, spec), **size),
    )
    x = np.linspace(-2, 3, 1000, dtype=np.float32)
    w = np.cos(np.arange(1000, dtype=np.float32))
    for make in (REVERSE["jit_grad"], REVERSE["vmap_grad"], REVERSE["scan_grad"]):
        assert_close(make(f)(x, w), make(reference)(x, w))
