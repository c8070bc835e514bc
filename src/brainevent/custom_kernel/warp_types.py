"""JAX/NumPy dtypes and shapes as Warp types, under brainevent 0.2.1's names."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backends import require_library
from ..vocabulary import SCALARS

# Warp has every scalar type of the binding except bfloat16 and the complex ones.
_NAMES = tuple(s.name for s in SCALARS if s.kind != "complex" and s.name != "bfloat16")


def jaxtype_to_warptype(dtype: Any) -> Any:
    """The Warp scalar type for ``dtype`` (anything ``numpy.dtype`` takes: ``float`` is float64).
    Warp has no bfloat16 or complex scalar: those are a ValueError naming the dtype."""
    require_library("warp")
    import warp

    try:
        name = np.dtype(dtype).name
    except TypeError as exc:
        raise ValueError(f"{dtype!r} is not a dtype Warp can compute with") from exc
    if name not in _NAMES:
        raise ValueError(
            f"Warp has no scalar type for dtype {name} (it supports {', '.join(_NAMES)}); "
            "convert the operand first, e.g. to float32"
        )
    return getattr(warp, name)


def jaxinfo_to_warpinfo(info: Any) -> Any:
    """The Warp array type for a ``jax.ShapeDtypeStruct`` (same dtype and number of dimensions).
    A 0-d struct is a ValueError: Warp arrays have at least one dimension (1-d would change the shape)."""
    require_library("warp")
    import warp

    if len(info.shape) == 0:
        raise ValueError(
            f"{info} is 0-dimensional; Warp arrays have at least one dimension: reshape it to (1,)"
        )
    return warp.array(dtype=jaxtype_to_warptype(info.dtype), ndim=len(info.shape))
