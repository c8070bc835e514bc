"""``jax.vmap`` of a primitive that calls a kernel, by the kernel's ``vmap_method``.

``"sequential"`` maps the unbatched call over the batch (``jax.lax.map``); ``"expand_dims"`` and
``"broadcast_all"`` hand the kernel one more leading axis (one more batch dim, if it declares them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all")


def batch_by_method(
    bind: Callable[..., Sequence[Any]],
    method: str,
    args: Sequence[Any],
    axes: Sequence[Any],
    outs: tuple[Any, ...],
    params: dict[str, Any],
) -> tuple[list[Any], list[Any]]:
    """``(results, out_axes)`` for ``bind(*args, outs=outs, **params)`` batched along ``axes``."""
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
        params = {**params, "batch_dims": params["batch_dims"] + 1}
    return list(bind(*lead, outs=wide, **params)), [0] * len(outs)


def with_batch_axis(args: Sequence[Any], batched: Sequence[bool], size: int, method: str | None) -> list[Any]:
    """Unbatched ``args`` given a leading batch axis: of ``size`` (``"broadcast_all"``) or of 1."""
    import jax.numpy as jnp

    if method == "broadcast_all":
        return [
            a if b else jnp.broadcast_to(a, (size, *jnp.shape(a))) for a, b in zip(args, batched, strict=True)
        ]
    return [a if b else jnp.expand_dims(a, 0) for a, b in zip(args, batched, strict=True)]
