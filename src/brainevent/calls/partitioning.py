"""Batch partitioning: how a custom call tells XLA that it may split the leading dims.

XLA's batch partitioner reads the ``num_batch_dims`` frontend attribute of a custom call
whose target was registered with ``jax.ffi.register_ffi_target_as_batch_partitionable``:
the first ``num_batch_dims`` dims of every operand and result are independent problems,
so a sharded input is partitioned, not gathered. Under the Shardy partitioner the call
also needs a sharding rule that ties those dims together.
"""

from __future__ import annotations

import string
import threading
from collections.abc import Sequence
from typing import Any

_registered: set[str] = set()


def check_batch_dims(name: str, arrays: Sequence[Any], specs: Sequence[Any], k: int) -> None:
    """KernelCallError unless every operand and result shares its first ``k`` dims."""
    shapes = [tuple(a.shape) for a in arrays] + [tuple(s.shape) for s in specs]
    leading = {s[:k] for s in shapes}
    if any(len(s) < k for s in shapes) or len(leading) != 1:
        from ..errors import KernelCallError

        raise KernelCallError(
            f"{name}: num_batch_dims={k} needs every operand and result to share its first "
            f"{k} dims, got shapes {shapes}",
            kernel=name,
        )


_lock = threading.Lock()


def register_batch_partitionable(target: str) -> None:
    """Registers ``target`` once per process (for every backend, including plugins)."""
    with _lock:
        if target in _registered:
            return
        import jax

        jax.ffi.register_ffi_target_as_batch_partitionable(target)
        _registered.add(target)


def _shardy_rule(ctx: Any, num_batch_dims: int) -> Any | None:
    """``b0 b1 x y, b0 b1 z -> b0 b1 w``: batch factors shared, every other dim its own."""
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
        parts = []
        for aval in avals:
            own = [next(letters) for _ in range(len(aval.shape) - num_batch_dims)]
            parts.append(" ".join(batch + own))
        return ", ".join(parts)

    try:
        text = f"{factors(ctx.avals_in)} -> {factors(ctx.avals_out)}"
    except StopIteration:
        return None  # more dims than factor names: leave the call to XLA's own partitioner

    def ir_type(aval: Any) -> Any:
        convert: Any = mlir.aval_to_ir_type
        try:
            return convert(ctx.module_context, aval)
        except TypeError:  # JAX versions whose helper takes the aval alone
            return convert(aval)

    in_types = [ir_type(a) for a in ctx.avals_in]
    out_types = [ir_type(a) for a in ctx.avals_out]
    return sdy_sharding_rule_to_mlir(str_to_sdy_sharding_rule(text), in_types, out_types)


def batch_partition_attributes(ctx: Any, num_batch_dims: int) -> dict[str, Any]:
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
