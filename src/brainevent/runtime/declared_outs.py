"""Results of the call sugar from the spec's declared shapes (``ret:like(x)``, ``ret:(n,4):float32``).

``mod.f(x)`` builds ``outs`` from the declarations when every result has one, and checks an
``outs=`` the caller gave against them before anything reaches XLA (the binding checks again
at run time, for ``jax.ffi.ffi_call`` callers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import KernelCallError

if TYPE_CHECKING:
    from ..spec.model import FunctionSpec, Param


def declared_results(
    target: str, spec: FunctionSpec, arrays: Sequence[Any], attrs: Mapping[str, Any], outs: Any
) -> list[Any] | None:
    """The result specs the declarations give, or None when a result has none (the caller's
    default applies). KernelCallError when ``outs`` contradicts a declaration."""
    rets = spec.rets
    if not rets or any(p.shape is None for p in rets):
        return None
    import jax

    inputs = {p.name: a for p, a in zip(spec.args, arrays, strict=False)}
    expected = [_expected(p, inputs, attrs) for p in rets]
    if outs is None:
        return [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in expected]
    given = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    for index, (p, item, (shape, dtype)) in enumerate(zip(rets, given, expected, strict=False)):
        got_shape, got_dtype = tuple(getattr(item, "shape", ())), getattr(item, "dtype", None)
        if got_dtype is None or (got_shape, np.dtype(got_dtype)) == (shape, dtype):
            continue
        raise KernelCallError(
            f"{target}: result {index} '{p.name}' (declared ret:{p.shape}) must have shape {shape} and "
            f"dtype {dtype}, got outs= with shape {got_shape} and dtype {np.dtype(got_dtype)}. Fix: drop "
            f"outs= (the declaration gives it), or pass jax.ShapeDtypeStruct({shape}, jnp.{dtype}).",
            target=target,
            parameter=p.name,
            result=index,
            value=(got_shape, str(np.dtype(got_dtype))),
        )
    return None


def _expected(
    p: Param, inputs: Mapping[str, Any], attrs: Mapping[str, Any]
) -> tuple[tuple[int, ...], np.dtype[Any]]:
    from ..spec.out_shape import parse_out_shape

    assert p.shape is not None
    decl = parse_out_shape(p.shape)
    assert decl is not None
    if decl.like is not None:
        like = inputs[decl.like]
        return tuple(np.shape(like)), np.dtype(decl.dtype or like.dtype)
    assert decl.dims is not None and decl.dtype is not None
    dims = tuple(d if isinstance(d, int) else int(attrs[d]) for d in decl.dims)
    return dims, np.dtype(decl.dtype)
