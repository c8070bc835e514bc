"""``brainevent.differentiable``: a kernel paired with the kernels of its derivatives.

One ``jax.custom_jvp`` serves both modes: its tangent is a linear primitive that runs ``jvp``
and transposes to the VJP (the two are transposes of each other), so ``jax.jvp`` runs the one
and ``jax.grad`` the other, under ``jit``, ``vmap``, loops and ``shard_map``; a missing one is
our error where that mode is asked for.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import KernelCallError
from .ffi import abstract_results, align_inputs

ONE_LINER = "f = brainevent.differentiable(f, vjp=bwd, jvp=...)"
_PRIMAL_ONLY = ("outs", "scratch_bytes")  # keywords that size f's results, not its derivatives'


@dataclass(frozen=True, slots=True)
class Differentiable:
    """``f`` with derivatives of its own; made by :func:`differentiable`."""

    f: Callable[..., Any]
    fwd: Callable[..., Any] | None
    bwd: Callable[..., Any] | None
    jvp: Callable[..., Any] | None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import jax
        import jax.numpy as jnp

        dkw = {k: v for k, v in kwargs.items() if k not in _PRIMAL_ONLY}
        call = jax.custom_jvp(lambda *xs: self.f(*xs, **kwargs))

        @call.defjvp
        def rule(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
            out, residuals = self._forward(primals, kwargs, dkw)
            # An integer input's tangent is float0: the kernels get zeros of the input's dtype.
            tangents = tuple(
                jnp.zeros_like(p) if t.dtype == jax.dtypes.float0 else t
                for p, t in zip(primals, tangents, strict=True)
            )
            flat_out, tree = jax.tree.flatten(out)
            found = _linear().bind(
                *align_inputs([*primals, *residuals, *tangents])[0],  # one type rule for all calls
                fun=lambda *a: self._tangents(a[: len(primals)], a[-len(primals) :], dkw),
                transpose=lambda *a: self._cotangents(
                    a[: len(residuals)], a[len(residuals) :], len(primals), dkw
                ),
                n_res=len(primals) + len(residuals),
                n_primals=len(primals),
                out_avals=tuple(jax.typeof(o) for o in flat_out),
            )
            return out, jax.tree.unflatten(tree, found)

        # Inputs cast to vary alike first: inside shard_map, JAX's own transpose of that cast
        # sums the cotangent of an input that did not vary.
        return call(*align_inputs(args)[0])

    def _forward(
        self, args: Sequence[Any], kw: dict[str, Any], dkw: dict[str, Any]
    ) -> tuple[Any, tuple[Any, ...]]:
        """``(f's results, residuals)``: through ``fwd`` where given, else ``f`` keeping the inputs."""
        import jax

        if self.fwd is None:
            return self.f(*args, **kw), tuple(args)
        shapes = jax.eval_shape(lambda *a: self.f(*a, **kw), *args)
        n = len(jax.tree.leaves(shapes))
        flat = list(self.fwd(*args, **dkw))
        return jax.tree.unflatten(jax.tree.structure(shapes), flat[:n]), tuple(flat[n:])

    def _tangents(self, primals: Sequence[Any], tangents: Sequence[Any], dkw: dict[str, Any]) -> list[Any]:
        import jax

        if self.jvp is None:
            raise self._missing("jax.jvp (forward mode) needs a JVP", "VJP")
        return list(jax.tree.leaves(self.jvp(*primals, *tangents, **dkw)))

    def _cotangents(
        self, residuals: Sequence[Any], cts: Sequence[Any], n: int, dkw: dict[str, Any]
    ) -> list[Any]:
        if self.bwd is None:
            raise self._missing("jax.grad and jax.vjp (reverse mode) need a VJP", "JVP")
        found = self.bwd(*residuals, *cts, **dkw)
        found = list(found) if isinstance(found, (list, tuple)) else [found]
        if len(found) != n:
            raise self._missing(f"its VJP returned {len(found)} cotangent(s) for {n} input(s)", "", n)
        return found

    def _missing(self, what: str, declared: str, n: int = 0) -> KernelCallError:
        name = _name(self.f)
        fix = f"declares only a {declared}. Add one" if declared else f"return {n} (None for no cotangent)"
        return KernelCallError(f"{name}: {what}; this function {fix}: {ONE_LINER}", kernel=name)


def differentiable(
    f: Callable[..., Any],
    *,
    vjp: Callable[..., Any] | tuple[Callable[..., Any], Callable[..., Any]] | None = None,
    jvp: Callable[..., Any] | None = None,
) -> Differentiable:
    """``f`` (any kernel: a module function, ``cuda_kernel``, a Numba kernel, an XLACustomKernel
    without rules, or Python around them) differentiated by the functions given, a new callable::

        step = brainevent.differentiable(mod.step, vjp=mod.step_vjp, jvp=mod.step_jvp)
        jax.grad(lambda x, w: step(x, w).sum())(x, w)

    ``vjp=bwd`` keeps the inputs as residuals and calls ``bwd(*inputs, *cotangents)``;
    ``vjp=(fwd, bwd)`` runs ``fwd(*inputs)`` (f's results, then the residuals, flat, as a kernel
    returns them) instead of ``f`` when differentiated and calls ``bwd(*residuals, *cotangents)``.
    ``bwd`` returns one cotangent per input (None: none). ``jvp(*inputs, *tangents)`` returns the
    results' tangents. Keywords of a call reach ``f`` and its derivatives alike, but ``outs``
    and ``scratch_bytes`` (f's alone). docs/transformations.md, "Derivatives".
    """
    fwd, bwd = vjp if isinstance(vjp, tuple) else (None, vjp)
    for what, g in (("f", f), ("vjp", bwd), ("vjp's fwd", fwd), ("jvp", jvp)):
        if g is not None and not callable(g):
            raise KernelCallError(
                f"differentiable: {what} must be callable, got {g!r}; {ONE_LINER}", value=repr(g)
            )
    if bwd is None and jvp is None:
        raise KernelCallError(
            f"differentiable({_name(f)}) needs vjp=, jvp= or both; {ONE_LINER}", kernel=_name(f)
        )
    return Differentiable(f, fwd, bwd, jvp)


def _name(g: Any) -> str:
    return str(getattr(g, "target", None) or getattr(g, "__name__", None) or g)


# -- the linear primitive: jvp(primals, tangents), transposed by bwd(residuals, cotangents) -----

_primitive: Any = None
_lock = threading.Lock()


def _transpose(
    cts: Sequence[Any], *args: Any, transpose: Callable[..., Any], n_res: int, n_primals: int, **_: Any
) -> list[Any]:
    from jax.interpreters import ad

    linear = args[n_res:]
    found = transpose(*args[n_primals:n_res], *map(ad.instantiate_zeros, cts))
    return [None] * n_res + [
        c if ad.is_undefined_primal(t) else None for c, t in zip(found, linear, strict=True)
    ]


def _batch(args: Sequence[Any], axes: Sequence[Any], *, fun: Any, transpose: Any, **params: Any) -> Any:
    """The pair vmapped, batch axes first; a linear operand without one is broadcast (its transpose
    sums), so that both functions map every linear value."""
    import jax
    import jax.numpy as jnp

    n_res, n_primals, out_avals = params["n_res"], params["n_primals"], params["out_avals"]
    size = next(a.shape[ax] for a, ax in zip(args, axes, strict=True) if ax is not None)
    res_axes = tuple(None if ax is None else 0 for ax in axes[:n_res])

    def lead(a: Any, ax: int | None, linear: bool) -> Any:
        if ax is not None:
            return jnp.moveaxis(a, ax, 0)
        return jnp.broadcast_to(a, (size, *jnp.shape(a))) if linear else a

    moved = [lead(a, ax, i >= n_res) for i, (a, ax) in enumerate(zip(args, axes, strict=True))]
    params["out_avals"] = tuple(a.update(shape=(size, *a.shape)) for a in out_avals)
    fun = jax.vmap(fun, in_axes=(*res_axes, *[0] * (len(args) - n_res)))
    transpose = jax.vmap(transpose, in_axes=(*res_axes[n_primals:], *[0] * len(out_avals)))
    out = _linear().bind(*moved, fun=fun, transpose=transpose, **params)
    return out, [0] * len(out)


def _linear() -> Any:
    global _primitive
    with _lock:
        if _primitive is None:
            from jax.extend.core import Primitive
            from jax.interpreters import ad, batching, mlir

            prim = Primitive("brainevent_linear")
            prim.multiple_results = True
            prim.def_impl(lambda *args, fun, **_: fun(*args))
            prim.def_abstract_eval(
                lambda *avals, out_avals, **_: abstract_results(prim.name, avals, out_avals)
            )
            mlir.register_lowering(prim, mlir.lower_fun(lambda *a, fun, **_: fun(*a), multiple_results=True))
            ad.primitive_transposes[prim] = _transpose
            batching.primitive_batchers[prim] = _batch
            _primitive = prim
        return _primitive
