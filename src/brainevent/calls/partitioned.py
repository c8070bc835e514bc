"""Module functions that declare batch dims: one custom call XLA may split across devices.

``mod.f.num_batch_dims = k`` says the first ``k`` dims of every operand and result are
independent problems. The call then binds this primitive instead of ``jax.ffi.ffi_call``:
its lowering is the same custom call plus the batch-partitioning attributes
(:mod:`.partitioning`), so ``jit`` with inputs sharded along those dims runs on the local
shards instead of gathering them. Result types follow :mod:`.results`; ``vmap`` follows
the function's ``vmap_method`` (:mod:`.batching`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import KernelCallError
from .batching import METHODS, batch_by_method
from .partitioning import batch_partition_attributes, check_batch_dims, register_batch_partitionable
from .results import abstract_results, align_inputs

_primitive: Any = None
_lock = threading.Lock()


def _abstract_eval(*avals: Any, outs: tuple[Any, ...], **params: Any) -> list[Any]:
    return abstract_results(avals, outs)


def _lower(ctx: Any, *operands: Any, target: str, batch_dims: int, attrs: tuple[Any, ...], **_: Any) -> Any:
    import jax

    register_batch_partitionable(target)
    extra = batch_partition_attributes(ctx, batch_dims)
    return jax.ffi.ffi_lowering(target, extra_attributes=extra)(ctx, *operands, **dict(attrs))


def _batch(args: Sequence[Any], axes: Sequence[Any], *, outs: tuple[Any, ...], **params: Any) -> Any:
    method = params["vmap_method"]
    if method not in METHODS:
        raise KernelCallError(
            f"{params['target']}: jax.vmap needs a batching method; set "
            f"mod.<function>.vmap_method to one of {list(METHODS)}",
            target=params["target"],
        )
    return batch_by_method(primitive().bind, method, args, axes, outs, params)


def _not_differentiable(primals: Any, tangents: Any, *, target: str, **_: Any) -> Any:
    raise KernelCallError(
        f"The FFI call to {target} cannot be differentiated: a compiled function has no JVP rule. "
        "Wrap it in an XLACustomKernel with def_jvp_rule, or in jax.custom_jvp",
        target=target,
    )


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
            prim.def_abstract_eval(_abstract_eval)
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
) -> list[Any]:
    """Call ``target`` with its first ``num_batch_dims`` dims declared independent."""
    from jax.core import ShapedArray

    check_batch_dims(target, inputs, specs, num_batch_dims)
    aligned, _ = align_inputs(inputs)
    outs = tuple(ShapedArray(tuple(int(d) for d in s.shape), s.dtype) for s in specs)
    results = primitive().bind(
        *aligned,
        outs=outs,
        target=target,
        batch_dims=num_batch_dims,
        vmap_method=vmap_method,
        attrs=tuple(sorted(attrs.items())),
    )
    return list(results)
