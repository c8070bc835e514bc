"""Turning ``grid``/``block``/``launch_dims`` into one fixed 3-D launch configuration."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..calls.batching import RANK_CHANGING

_MAX_THREADS_PER_BLOCK = 1024


@dataclass(frozen=True)
class LaunchConfig:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int

    @property
    def empty(self) -> bool:
        """A grid with no block (``launch_dims=0``, ``grid=0``): nothing is launched."""
        return 0 in self.grid


def is_int(value: Any) -> bool:
    """An int, and not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def _dims(value: Any, name: str, *, allow_zero: bool = False) -> tuple[int, int, int]:
    """An int or 1-3 positive (``allow_zero``: non-negative) ints, padded with 1s to three."""
    items: Sequence[Any] = (value,) if not isinstance(value, (tuple, list)) else value
    if not 1 <= len(items) <= 3:
        raise ValueError(f"{name} must have 1, 2 or 3 dimensions, got {value!r}")
    if not all(is_int(item) and item >= (0 if allow_zero else 1) for item in items):
        kind = "non-negative" if allow_zero else "positive"
        raise ValueError(f"{name} must hold {kind} integers, got {value!r}")
    out = [int(item) for item in items] + [1] * (3 - len(items))
    return out[0], out[1], out[2]


def _block_for(ndim: int, threads_per_block: int) -> tuple[int, int, int]:
    # x gets a full warp first so that neighbouring threads touch neighbouring elements.
    x = min(threads_per_block, 32)
    rest = threads_per_block // x
    if ndim == 1:
        return threads_per_block, 1, 1
    if ndim == 2:
        return x, rest, 1
    y = max(rest // 2, 1)
    return x, y, max(rest // y, 1)


def resolve_launch(
    grid: Any,
    block: Any,
    launch_dims: Any,
    threads_per_block: int,
    shared_mem: int,
    *,
    vmap_method: str | None = None,
    allow_empty: bool = False,
) -> LaunchConfig:
    """The user's choice checked in brainevent 0.2.1's order (which of ``(grid, block)`` and
    ``launch_dims``, ``vmap_method``, the values); ValueError for every inconsistency.
    ``allow_empty``: a zero extent is accepted (see ``LaunchConfig.empty``)."""
    explicit = grid is not None or block is not None
    if explicit and launch_dims is not None:
        raise ValueError("give either (grid, block) or launch_dims, not both")
    if explicit and (grid is None or block is None):
        missing = "block" if block is None else "grid"
        raise ValueError(f"grid and block must be given together ({missing} is missing)")
    if not explicit and launch_dims is None:
        raise ValueError("a launch configuration is required: pass grid= and block=, or launch_dims=")
    if explicit and vmap_method in RANK_CHANGING:
        raise ValueError(
            f"vmap_method={vmap_method!r} needs launch_dims=: an explicit grid/block cannot be "
            "adapted to a batch. Pass launch_dims= (each batch element is then launched with "
            "it), or vmap_method='sequential'."
        )
    if not is_int(shared_mem) or shared_mem < 0:
        raise ValueError(f"shared_mem must be a non-negative int (bytes), got {shared_mem!r}")
    if launch_dims is not None:
        if not is_int(threads_per_block) or not 1 <= threads_per_block <= _MAX_THREADS_PER_BLOCK:
            raise ValueError(
                f"threads_per_block must be an int in [1, {_MAX_THREADS_PER_BLOCK}], "
                f"got {threads_per_block!r}"
            )
        ndim = 1 if not isinstance(launch_dims, (tuple, list)) else len(launch_dims)
        total = _dims(launch_dims, "launch_dims", allow_zero=allow_empty)
        block3 = _block_for(ndim, threads_per_block)
        grid3 = tuple(-(-n // b) for n, b in zip(total, block3, strict=True))
        return LaunchConfig((grid3[0], grid3[1], grid3[2]), block3, shared_mem)
    grid3, block3 = _dims(grid, "grid", allow_zero=allow_empty), _dims(block, "block")
    if block3[0] * block3[1] * block3[2] > _MAX_THREADS_PER_BLOCK:
        raise ValueError(f"block {block!r} has more than {_MAX_THREADS_PER_BLOCK} threads")
    return LaunchConfig(grid3, block3, shared_mem)
