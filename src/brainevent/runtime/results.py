"""The results the call sugar derives from the spec: declared shapes and the scratch result.

``mod.f(x)`` builds ``outs`` from declared shapes (``ret:like(x)``, ``ret:(n,4):float32``) and
checks an ``outs=`` the caller gave against them; a ``scratch`` parameter is one more ``uint8``
result of the custom call, which the call sugar drops (docs/arg-spec.md).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import KernelCallError
from .attrs import call_error

if TYPE_CHECKING:
    from ..spec.model import FunctionSpec, Param


def result_specs(
    target: str, spec: FunctionSpec, arrays: Sequence[Any], attrs: Mapping[str, Any], outs: Any
) -> list[Any]:
    """One ``jax.ShapeDtypeStruct`` per ``ret``: ``outs`` (one spec or a pytree of them, flattened
    as every call path does; checked against the declared shapes), else the declarations, else
    the first input's shape and dtype."""
    import jax

    from ..calls.ffi import flatten_outs

    rets = spec.rets
    try:
        given = None if outs is None else flatten_outs(outs, target)[0]
    except KernelCallError:
        raise
    except (TypeError, ValueError) as exc:  # a leaf that is no spec, or none: the call's error
        raise call_error(target, str(exc)) from None
    if given is not None and len(given) != len(rets):
        raise call_error(
            target, f"expected {len(rets)} result spec(s) in outs= (one per 'ret'), got {len(given)}"
        )
    if rets and all(_declared(p) is not None for p in rets):
        inputs = {p.name: a for p, a in zip(spec.args, arrays, strict=False)}
        expected = [_expected(p, inputs, attrs, target) for p in rets]
        if given is None:
            return [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in expected]
        for index, (p, item, (shape, dtype)) in enumerate(zip(rets, given, expected, strict=True)):
            got = (tuple(item.shape), np.dtype(item.dtype))
            if got != (shape, dtype):
                raise call_error(
                    target,
                    f"result {index} '{p.name}' (declared ret:{p.shape}) must have shape {shape} and dtype "
                    f"{dtype}, got outs= with shape {got[0]} and dtype {got[1]}. Fix: drop outs= (the "
                    f"declaration gives it), or pass jax.ShapeDtypeStruct({shape}, jnp.{dtype}).",
                    parameter=p.name,
                    result=index,
                    value=(got[0], str(got[1])),
                )
    if given is not None:
        return given
    if not arrays:
        raise call_error(
            target, "has no inputs to take result shapes from; pass outs=jax.ShapeDtypeStruct(...)"
        )
    return [jax.ShapeDtypeStruct(np.shape(arrays[0]), arrays[0].dtype) for _ in rets]


def _declared(p: Param) -> Any:
    """The result's declaration when it gives a shape (``ret:zeros`` alone does not), else None."""
    from ..spec.out_shape import parse_out_shape

    decl = parse_out_shape(p.shape) if p.shape else None
    return decl if decl is not None and decl.sized else None


def _expected(
    p: Param, inputs: Mapping[str, Any], attrs: Mapping[str, Any], target: str = ""
) -> tuple[tuple[int, ...], np.dtype[Any]]:
    from ..spec.out_shape import input_dim

    decl = _declared(p)
    if decl.like is not None:
        like = inputs[decl.like]
        return tuple(np.shape(like)), np.dtype(decl.dtype or like.dtype)
    dims = []
    for d in decl.dims:
        of_input = input_dim(d)
        if of_input is None:
            dims.append(d if isinstance(d, int) else int(attrs[d]))
            continue
        shape = np.shape(inputs[of_input[0]])
        if of_input[1] >= len(shape):
            raise call_error(
                target,
                f"result '{p.name}' is declared ret:{p.shape}, but input {of_input[0]!r} has shape {shape}, "
                f"which has no dim {of_input[1]}. Fix: pass an input of rank {of_input[1] + 1} or more.",
                parameter=p.name,
            )
        dims.append(int(shape[of_input[1]]))
    return tuple(dims), np.dtype(decl.dtype)


def scratch_result(target: str, spec: FunctionSpec, arrays: Sequence[Any], scratch_bytes: Any) -> Any:
    """``jax.ShapeDtypeStruct((nbytes,), uint8)`` for the function's scratch parameter: ``nbytes``
    is ``scratch_bytes`` (an int, or a callable of the input arrays), else the ``scratch:<bytes>``
    of the arg_spec; a KernelCallError says what is missing or wrong."""
    import jax

    if not spec.scratch:
        raise call_error(
            target,
            f"scratch_bytes={scratch_bytes!r} was given but the function has no 'scratch' parameter "
            f"({' '.join(spec.tokens())}); drop scratch_bytes=, or add a BE::Scratch parameter",
            value=scratch_bytes,
        )
    default = spec.scratch[0].scratch_bytes
    if scratch_bytes is None and default is None:
        raise call_error(
            target,
            "its 'scratch' parameter has no size; pass scratch_bytes=<int> or scratch_bytes=lambda "
            "*arrays: <int> (computed from the inputs' shapes), or write 'scratch:<bytes>' in the arg_spec",
        )
    value: Any = default if scratch_bytes is None else scratch_bytes
    value = value(*arrays) if callable(value) else value
    try:
        nbytes = operator.index(value)  # ints and NumPy integers, not floats
    except TypeError:
        nbytes = -1
    if isinstance(value, (bool, np.bool_)) or nbytes < 0:
        source = "scratch_bytes(*arrays) returned" if callable(scratch_bytes) else "scratch_bytes="
        raise call_error(
            target, f"{source} {value!r}; expected a non-negative int number of bytes", value=value
        )
    return jax.ShapeDtypeStruct((nbytes,), np.uint8)
