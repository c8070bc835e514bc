"""Batching: ``jax.vmap`` of a primitive that calls a kernel, and calls that declare batch dims.

``jax.vmap`` follows the kernel's ``vmap_method``. A call that declares batch dims
(``num_batch_dims = k``) is one custom call XLA may split across devices: its operands and
results share those dims (:func:`batch_operands`), and the lowering adds the attribute XLA's
batch partitioner reads (and a Shardy rule). docs/transformations.md and docs/multi-gpu.md.
"""

from __future__ import annotations

import string
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import KernelCallError
from .ffi import abstract_results, align_inputs, not_differentiable

# The vmap methods of jax.ffi.ffi_call, every kernel kind's: the rank-changing ones hand a launch
# batched arrays (a fixed grid cannot follow them); None (where a kind allows it): not vmappable.
RANK_CHANGING = ("expand_dims", "broadcast_all")
METHODS = ("sequential", "sequential_unrolled", *RANK_CHANGING)


def check_vmap_method(vmap_method: object, *, allow_none: bool = True) -> None:
    """The one check of a ``vmap_method`` argument: KernelCallError naming the choices."""
    allowed = (None, *METHODS) if allow_none else METHODS
    if vmap_method not in allowed:
        raise KernelCallError(
            f"vmap_method must be one of {allowed}, got {vmap_method!r}", value=repr(vmap_method)
        )


def batch_by_method(
    name: str,
    bind: Callable[..., Sequence[Any]],
    method: str,
    args: Sequence[Any],
    axes: Sequence[Any],
    outs: tuple[Any, ...],
    params: dict[str, Any],
) -> tuple[list[Any], list[Any]]:
    """``(results, out_axes)`` for ``bind(*args, outs=outs, **params)`` batched along ``axes``;
    with ``batch_dims`` in ``params``, the new axis is one more batch dim."""
    import jax
    import jax.numpy as jnp
    from jax.core import ShapedArray

    size = next(a.shape[ax] for a, ax in zip(args, axes, strict=True) if ax is not None)
    moved = [a if ax is None else jnp.moveaxis(a, ax, 0) for a, ax in zip(args, axes, strict=True)]
    if method in ("sequential", "sequential_unrolled"):
        batched = [i for i, ax in enumerate(axes) if ax is not None]

        def one(slices: list[Any]) -> list[Any]:
            pieces = dict(zip(batched, slices, strict=True))
            return list(bind(*(pieces.get(i, a) for i, a in enumerate(moved)), outs=outs, **params))

        results = jax.lax.map(one, [moved[i] for i in batched])
        return list(results), [0] * len(outs)
    lead = with_batch_axis(moved, [ax is not None for ax in axes], size, method)
    wide = tuple(ShapedArray((size, *o.shape), o.dtype) for o in outs)
    if "batch_dims" in params:
        k = params["batch_dims"] + 1
        lead, params = batch_operands(name, lead, wide, k), {**params, "batch_dims": k}
    return list(bind(*lead, outs=wide, **params)), [0] * len(outs)


def with_batch_axis(args: Sequence[Any], batched: Sequence[bool], size: int, method: str | None) -> list[Any]:
    """Unbatched ``args`` given a leading batch axis: of ``size`` (``"broadcast_all"``) or of 1."""
    import jax.numpy as jnp

    lead = size if method == "broadcast_all" else 1
    return [
        a if b else jnp.broadcast_to(a, (lead, *jnp.shape(a))) for a, b in zip(args, batched, strict=True)
    ]


_primitive: Any = None
_lock = threading.Lock()


def batch_operands(name: str, arrays: Sequence[Any], specs: Sequence[Any], k: int) -> list[Any]:
    """``arrays`` with each batch dim of 1 broadcast over the batch, so that the kernel of a call
    declaring ``k`` batch dims sees operands and results sharing their first ``k`` dims (it may
    read any operand as far as its own size); KernelCallError when they cannot."""
    import jax.numpy as jnp

    ins = [tuple(jnp.shape(a)) for a in arrays]
    results = [tuple(s.shape) for s in specs]
    shapes = ins + results
    batch: tuple[int, ...] | None = None
    if all(len(s) >= k for s in shapes):
        sizes = [{s[d] for s in shapes} - {1} for d in range(k)]
        if all(len(found) <= 1 for found in sizes):
            batch = tuple(min(found, default=1) for found in sizes)
    if batch is None or any(s[:k] != batch for s in results):
        raise KernelCallError(
            f"{name}: num_batch_dims={k} needs every operand and result to share its first {k} dims "
            f"(an operand's may be 1, broadcast over the batch; a result has the whole batch), got shapes "
            f"{shapes} (operands, then results)",
            kernel=name,
        )
    pairs = zip(arrays, ins, strict=True)
    return [a if s[:k] == batch else jnp.broadcast_to(a, batch + s[k:]) for a, s in pairs]


def _shardy_rule(ctx: Any, num_batch_dims: int) -> Any | None:
    """``b0 b1 x y, b0 b1 z -> b0 b1 w``: batch factors shared, every other dim its own. (JAX's
    own rule for linalg calls writes the batch dims as ``...``, which refuses a size-1 batch
    dim beside a larger one, as ``vmap``'s ``expand_dims`` gives.)"""
    try:
        from jax._src.custom_partitioning_sharding_rule import (
            sdy_sharding_rule_to_mlir,
            str_to_sdy_sharding_rule,
        )
        from jax.interpreters import mlir
    except ImportError:  # a JAX without Shardy rules: XLA's own partitioner reads the attribute
        return None
    letters = iter(string.ascii_letters)
    batch = [next(letters) for _ in range(num_batch_dims)]

    def factors(avals: Sequence[Any]) -> str:
        own = [[next(letters) for _ in range(len(aval.shape) - num_batch_dims)] for aval in avals]
        return ", ".join(" ".join(batch + dims) for dims in own)

    try:
        rule = str_to_sdy_sharding_rule(f"{factors(ctx.avals_in)} -> {factors(ctx.avals_out)}")
    except StopIteration:
        return None  # more dims than factor names: leave the call to XLA's own partitioner
    types = [
        [mlir.aval_to_ir_type(ctx.module_context, a) for a in avals]
        for avals in (ctx.avals_in, ctx.avals_out)
    ]
    return sdy_sharding_rule_to_mlir(rule, *types)


def batch_partition_attributes(ctx: Any, num_batch_dims: int) -> dict[str, Any]:
    """The lowering's extra attributes (the target was registered as batch partitionable with
    its handler, so that a deserialized program partitions too)."""
    import jax
    from jax.interpreters import mlir

    attributes: dict[str, Any] = {
        "mhlo.frontend_attributes": mlir.ir_attribute({"num_batch_dims": str(num_batch_dims)})
    }
    if getattr(jax.config, "jax_use_shardy_partitioner", False):
        rule = _shardy_rule(ctx, num_batch_dims)
        if rule is not None:
            attributes["sdy.sharding_rule"] = rule
    return attributes


def _lower(
    ctx: Any,
    *operands: Any,
    target: str,
    batch_dims: int,
    attrs: tuple[Any, ...],
    aliases: tuple[Any, ...] = (),
    **_: Any,
) -> Any:
    import jax

    extra = batch_partition_attributes(ctx, batch_dims)
    shared = dict(aliases) or None  # {operand: result}: results declared ':zeros'
    lowering = jax.ffi.ffi_lowering(target, extra_attributes=extra, operand_output_aliases=shared)
    return lowering(ctx, *operands, **dict(attrs))


def _batch(args: Sequence[Any], axes: Sequence[Any], *, outs: tuple[Any, ...], **params: Any) -> Any:
    method = params["vmap_method"]
    if method not in METHODS:  # e.g. vmap(jit(f)): the call was traced outside vmap
        from .declared import no_vmap_method

        raise no_vmap_method(params["target"])
    return batch_by_method(params["target"], primitive().bind, method, args, axes, outs, params)


def _not_differentiable(primals: Any, tangents: Any, *, target: str, **_: Any) -> Any:
    raise not_differentiable(target)


def primitive() -> Any:
    """The primitive, made on first use (creating it imports JAX's internals)."""
    global _primitive
    with _lock:
        if _primitive is None:
            from functools import partial

            from jax._src import dispatch
            from jax.extend.core import Primitive
            from jax.interpreters import ad, batching, mlir

            prim = Primitive("brainevent_partitioned_call")
            prim.multiple_results = True
            prim.def_impl(partial(dispatch.apply_primitive, prim))
            prim.def_abstract_eval(lambda *avals, outs, target, **_: abstract_results(target, avals, outs))
            mlir.register_lowering(prim, _lower)
            batching.primitive_batchers[prim] = _batch
            ad.primitive_jvps[prim] = _not_differentiable
            _primitive = prim
        return _primitive


def partitioned_call(
    target: str,
    inputs: Sequence[Any],
    specs: Sequence[Any],
    num_batch_dims: int,
    vmap_method: str | None,
    attrs: Mapping[str, Any],
    aliases: Mapping[int, int] | None = None,
) -> list[Any]:
    """Call ``target`` with its first ``num_batch_dims`` dims declared independent; ``aliases``:
    ``{input: result}`` buffers shared, as ``input_output_aliases``."""
    from jax.core import ShapedArray

    aligned, _ = align_inputs(batch_operands(target, inputs, specs, num_batch_dims))
    outs = tuple(ShapedArray(tuple(int(d) for d in s.shape), s.dtype) for s in specs)
    params = {"outs": outs, "target": target, "batch_dims": num_batch_dims, "vmap_method": vmap_method}
    params |= {"attrs": tuple(sorted(attrs.items())), "aliases": tuple(sorted((aliases or {}).items()))}
    return list(primitive().bind(*aligned, **params))
