"""The results the call sugar derives from the spec.

Declared shapes (``ret:like(x)``, ``ret:(n,4):float32``): ``mod.f(x)`` builds ``outs`` from
them when every result has one, and checks an ``outs=`` the caller gave against them before
anything reaches XLA (the binding checks again at run time, for ``jax.ffi.ffi_call`` callers).

Scratch: a ``scratch`` parameter is not an operand but one more result of the custom call (a
1-D ``uint8`` array after the ``ret`` results), so the memory comes from XLA's allocator and
keeps a fixed address inside a captured CUDA graph; the call sugar drops it from what it returns.
"""

from __future__ import annotations

import operator
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


def scratch_result(target: str, spec: FunctionSpec, arrays: Sequence[Any], scratch_bytes: Any) -> Any:
    """``jax.ShapeDtypeStruct((nbytes,), uint8)`` for the function's scratch parameter: ``nbytes``
    is ``scratch_bytes`` (an int, or a callable of the input arrays), else the ``scratch:<bytes>``
    of the arg_spec; a KernelCallError says what is missing or wrong."""
    import jax

    if not spec.scratch:
        raise KernelCallError(
            f"{target}: scratch_bytes={scratch_bytes!r} was given but the function has no 'scratch' "
            f"parameter ({' '.join(spec.tokens())}); drop scratch_bytes=, or add a BE::Scratch parameter",
            target=target,
            value=scratch_bytes,
        )
    default = spec.scratch[0].scratch_bytes
    if scratch_bytes is None:
        if default is None:
            raise KernelCallError(
                f"{target}: its 'scratch' parameter has no size; pass scratch_bytes=<int> or "
                "scratch_bytes=lambda *arrays: <int> (computed from the inputs' shapes), or write "
                "'scratch:<bytes>' in the arg_spec",
                target=target,
            )
        return jax.ShapeDtypeStruct((default,), np.uint8)
    value = scratch_bytes(*arrays) if callable(scratch_bytes) else scratch_bytes
    try:
        nbytes = operator.index(value)  # ints and NumPy integers, not floats
    except TypeError:
        nbytes = -1
    if isinstance(value, (bool, np.bool_)) or nbytes < 0:
        source = "scratch_bytes(*arrays) returned" if callable(scratch_bytes) else "scratch_bytes="
        raise KernelCallError(
            f"{target}: {source} {value!r}; expected a non-negative int number of bytes",
            target=target,
            value=value,
        )
    return jax.ShapeDtypeStruct((nbytes,), np.uint8)
