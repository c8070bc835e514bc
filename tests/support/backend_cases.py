"""One primitive for the backend tests: ``axpy(x, y) = 2 x + y`` on float32 vectors, with the
rules every backend shares (JVP, transpose, a batching rule that flattens the batch into
the vector), and the checks each backend must pass against NumPy: jit, vmap, jvp, grad and
a 1000-step fori_loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.interpreters import ad

from brainevent.custom_kernel import XLACustomKernel

STEPS = 1000


def spec(x: Any, y: Any) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(x.shape, x.dtype)


def axpy_primitive(name: str) -> XLACustomKernel:
    """The primitive and its rules; backends are added by the caller."""
    op = XLACustomKernel(name, outs=spec)

    @op.def_jvp_rule
    def jvp(primals: list[Any], tangents: list[Any], *, outs: Any) -> Any:
        return op(*primals), op(*tangents)  # linear in (x, y)

    @op.def_transpose_rule
    def transpose(cts: list[Any], x: Any, y: Any, *, outs: Any) -> list[Any]:
        (ct,) = cts
        return [2.0 * ct if ad.is_undefined_primal(x) else None, ct if ad.is_undefined_primal(y) else None]

    @op.def_batching_rule
    def batch(args: list[Any], axes: list[Any], *, outs: Any) -> tuple[list[Any], list[int]]:
        size = next(a.shape[ax] for a, ax in zip(args, axes, strict=True) if ax is not None)
        lead = [
            jnp.moveaxis(a, ax, 0) if ax is not None else jnp.broadcast_to(a, (size, *a.shape))
            for a, ax in zip(args, axes, strict=True)
        ]
        flat = op(*(a.reshape(-1) for a in lead))  # one launch over the whole batch
        return [flat.reshape(lead[0].shape)], [0]

    return op


def inputs(n: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.linspace(-3.0, 5.0, n, dtype=np.float32)
    y = np.cos(np.arange(n, dtype=np.float32))
    return x, y


def check_backend(op: XLACustomKernel, backend: str, n: int, put: Callable[[Any], Any]) -> None:
    """``op`` with ``backend=`` matches NumPy under jit, vmap, jvp, grad and a 1000-step loop;
    ``put`` places an array on the device under test."""

    def f(a: Any, b: Any) -> Any:
        return op(a, b, backend=backend)

    x, y = inputs(n)
    dx, dy = put(x), put(y)
    np.testing.assert_allclose(np.asarray(jax.jit(f)(dx, dy)), 2 * x + y, rtol=1e-6, err_msg=backend)

    xs = np.stack([x, -x, 0.5 * x])
    got = jax.jit(jax.vmap(f, in_axes=(0, None)))(put(xs), dy)
    np.testing.assert_allclose(np.asarray(got), 2 * xs + y, rtol=1e-6, err_msg=f"{backend} vmap")
    ys = np.stack([y, 2 * y])
    got = jax.jit(jax.vmap(f))(put(np.stack([x, x])), put(ys))
    np.testing.assert_allclose(np.asarray(got), 2 * x + ys, rtol=1e-6, err_msg=f"{backend} vmap both")

    _, tangent = jax.jit(lambda a, b: jax.jvp(f, (a, b), (b, a)))(dx, dy)
    np.testing.assert_allclose(np.asarray(tangent), 2 * y + x, rtol=1e-6, err_msg=f"{backend} jvp")
    w = put(np.sin(np.arange(n, dtype=np.float32)))
    gx, gy = jax.jit(jax.grad(lambda a, b: (f(a, b) * w).sum(), argnums=(0, 1)))(dx, dy)
    np.testing.assert_allclose(np.asarray(gx), 2 * np.asarray(w), rtol=1e-6, err_msg=f"{backend} grad x")
    np.testing.assert_allclose(np.asarray(gy), np.asarray(w), rtol=1e-6, err_msg=f"{backend} grad y")

    # u <- 2 (u / 2) + 1: after STEPS steps from zero, every element is STEPS.
    ones = put(np.ones(n, np.float32))
    loop = jax.jit(lambda u: jax.lax.fori_loop(0, STEPS, lambda _, v: f(0.5 * v, ones), u))
    np.testing.assert_allclose(np.asarray(loop(put(np.zeros(n, np.float32)))), np.full(n, float(STEPS)))
