"""Attribute values as the binding takes them: a call's Python scalars become NumPy scalars of
the declared types, checked for kind and range, so that XLA never sees a wrong scalar type."""

from __future__ import annotations

from typing import Any

import ml_dtypes  # shipped with jax
import numpy as np

from ..calls.declared import call_error
from ..errors import KernelCallError


def convert_attr(target: str, name: str, dtype: str, value: Any) -> Any:
    """A NumPy scalar of exactly the declared type, or a KernelCallError naming the attribute."""
    if hasattr(value, "aval") and "Tracer" in type(value).__name__:  # a jit, grad or vmap tracer
        raise _error(
            target,
            name,
            f"({dtype}) got a traced value {value!r}: attributes are constants compiled into the call, "
            "known when it is traced. Fix: if the value is computed from the inputs, pass it as an input "
            "array (an 'arg' parameter the kernel reads); if it is a constant, give a Python or NumPy "
            f"scalar ({name}=2.0 or np.float32(2.0); jnp.float32(2.0) inside jax.jit is traced), close "
            f"over it, or mark it static (jax.jit(f, static_argnames={name!r}))",
        )
    if hasattr(value, "__array__") and np.ndim(value) == 0 and not isinstance(value, np.generic):
        value = np.asarray(value)[()]  # a concrete JAX scalar (jnp.float32(2.0)) or a 0-d array: its value
    if isinstance(value, np.generic) and not isinstance(value, (np.number, np.bool_)):
        value = float(value)  # ml_dtypes' scalars (bfloat16, float8_*), which NumPy files under no kind
    np_type: Any = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype).type  # NumPy's names
    kind = np.dtype(np_type).kind
    if hasattr(value, "shape") and np.ndim(value) != 0:
        raise _error(target, name, f"must be a scalar {dtype}, got an array of shape {np.shape(value)}")
    if kind in "iu":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise _error(
                target, name, f"expects {dtype}, got {value!r} ({type(value).__name__}); pass an int"
            )
        info = np.iinfo(np_type)
        if not info.min <= int(value) <= info.max:
            raise _error(target, name, f"= {value} is out of range for {dtype} [{info.min}, {info.max}]")
        return np_type(int(value))
    if kind == "b":
        if not isinstance(value, (bool, np.bool_)):
            raise _error(target, name, f"expects bool, got {value!r}; pass True or False")
        return np.bool_(value)
    half = dtype in ("float16", "bfloat16")
    if kind == "f" or half:  # bfloat16's NumPy kind is "V"
        if half and isinstance(value, np.uint16):
            return value  # already the bits
        if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
            raise _error(target, name, f"expects {dtype}, got {value!r} ({type(value).__name__})")
        limit = float(ml_dtypes.finfo(np_type).max)  # unlike np.finfo, it knows bfloat16
        try:
            out_of_range = bool(np.isfinite(float(value))) and abs(float(value)) > limit
        except OverflowError:  # an int beyond any float
            out_of_range = True
        if out_of_range:
            raise _error(target, name, f"= {value} is out of range for {dtype} (|x| <= {limit:g})")
        if half:  # XLA has no 16-bit float attributes: the bits, as 0.2.1 passed them
            return np.asarray(float(value), dtype=np_type).view(np.uint16)[()]
        return np_type(value)
    return _complex_attr(target, name, dtype, value)  # complex64 / complex128: all that is left


def _error(target: str, name: str, message: str) -> KernelCallError:
    return call_error(target, f"attribute {name!r} {message}", attribute=name)


def _complex_attr(target: str, name: str, dtype: str, value: Any) -> np.ndarray:
    """[re, im] as floats: MLIR has no complex scalar attribute, so ``ffi_call`` cannot pass one."""
    if not isinstance(value, (int, float, complex, np.number)) or isinstance(value, (bool, np.bool_)):
        raise _error(
            target,
            name,
            f"expects {dtype}, got {value!r} ({type(value).__name__}); pass a complex, float or int",
        )
    number = complex(value)
    part = np.float32 if dtype == "complex64" else np.float64
    limit = float(np.finfo(part).max)
    for component in (number.real, number.imag):
        if np.isfinite(component) and abs(component) > limit:
            raise _error(target, name, f"= {value} is out of range for {dtype} (each part |x| <= {limit:g})")
    return np.array([number.real, number.imag], dtype=part)
