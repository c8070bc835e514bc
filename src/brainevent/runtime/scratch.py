"""The size of a call's scratch buffer, and the extra result XLA allocates it as.

A ``scratch`` parameter is not an operand: XLA allocates it as one more result of the
custom call (a 1-D ``uint8`` array of the requested size, after the ``ret`` results), so
the memory comes from XLA's own allocator and keeps a fixed address inside a captured
CUDA graph. The call sugar adds that result and drops it from what the caller receives.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import KernelCallError
from ..spec.model import FunctionSpec


def scratch_result(target: str, spec: FunctionSpec, arrays: Sequence[Any], scratch_bytes: Any) -> Any:
    """``jax.ShapeDtypeStruct((nbytes,), uint8)`` for the function's scratch parameter."""
    import jax

    nbytes = scratch_size(target, spec, arrays, scratch_bytes)
    return jax.ShapeDtypeStruct((nbytes,), np.uint8)


def scratch_size(target: str, spec: FunctionSpec, arrays: Sequence[Any], scratch_bytes: Any) -> int:
    """The byte count: ``scratch_bytes`` (an int, or a callable of the input arrays), else the
    ``scratch:<bytes>`` of the arg_spec; a KernelCallError says what is missing or wrong."""
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
        return default
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
    return nbytes
