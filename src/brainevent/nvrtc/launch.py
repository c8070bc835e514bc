"""From a call's abstract operands to a registered cubin launch (launchers/cubin.py), for
``cuda_kernel`` and the ``XLACustomKernel`` backend. Pointer parameters take the operands (inputs,
then outputs); scalars are stored with the registration; the call carries the whole kernel."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import KernelCallError
from ..launchers.launch_config import LaunchConfig
from .params import KernelParam, KernelSignature, kernel_signature
from .source import KernelSource


@functools.cache
def signature_for(source: KernelSource, expression: str) -> KernelSignature:
    return kernel_signature(source.text, expression, source.where)


def _error(expression: str, message: str, **data: Any) -> KernelCallError:
    """The error about kernel ``expression`` (``message`` goes on from its name)."""
    return KernelCallError(f"kernel {expression!r}{message}", kernel=expression, **data)


def check_scalar_names(sig: KernelSignature, given: Sequence[str], expression: str) -> None:
    """Every scalar parameter bound once, and no name that is not one."""
    from ..spec.names import did_you_mean

    names = [p.name for p in sig.scalars]
    unknown = [g for g in given if g not in names]
    if unknown:
        pointer = [g for g in unknown if g in {p.name for p in sig.pointers}]
        why = (
            f"{pointer} are pointer parameters, which receive the arrays (inputs, then outputs)"
            if pointer
            else f"the kernel's scalar parameters are {names}.{did_you_mean(unknown[0], names)}"
        )
        raise _error(expression, f" has no scalar parameter {unknown[0]!r}: {why}", parameter=unknown[0])
    missing = [n for n in names if n not in given]
    if missing:
        raise _error(
            expression,
            f" needs a value for its scalar parameter(s) {missing}: pass them as keywords (e.g. "
            f"{missing[0]}=... or {missing[0]}=lambda *ins: ins[0].size)",
            parameter=missing[0],
        )


def scalar_bytes(param: KernelParam, value: Any, expression: str) -> bytes:
    """``value`` as the parameter's type, its bytes as the kernel receives them."""
    name, cxx = param.name, param.cxx_type
    if param.dtype is None:
        raise _error(
            expression,
            f": parameter {name!r} has type {cxx!r}, which is neither a pointer nor a plain scalar type "
            "(bool, integers, float, double, __half, __nv_bfloat16); pass structs as arrays",
            parameter=name,
        )
    try:
        import jax.numpy as jnp

        dtype = np.dtype(jnp.dtype(param.dtype))
        raw = np.asarray(value)
    except Exception as exc:  # a tracer: the value is not known when the kernel is prepared
        got = f"{type(value).__name__} ({exc.__class__.__name__})"
        why = f"must be a number known at trace time, got {got}; pass values computed inside jit as arrays"
        raise _error(expression, f": scalar {name!r} {why}", parameter=name) from None
    problem: str | None = None
    if raw.ndim != 0 or raw.dtype.kind not in "biuf":
        problem = f" must be a single number, got {value!r}"
    elif dtype.kind in "iu" and raw.dtype.kind == "f" and not float(raw).is_integer():
        problem = f"={float(raw)!r} is not a whole number, but its type is {cxx}"
    elif dtype.kind in "iu":
        info, raw = np.iinfo(dtype), np.asarray(int(raw))
        if not info.min <= int(raw) <= info.max:
            problem = f"={int(raw)} does not fit its type {cxx} ({info.min}..{info.max})"
    if problem is not None:
        raise _error(expression, f": scalar {name!r}{problem}", parameter=name)
    return raw.astype(dtype).tobytes()


def operand_params(
    sig: KernelSignature,
    expression: str,
    operands: Sequence[Any],
    n_inputs: int,
    scalars: Mapping[str, Any],
) -> list[Any]:
    """The launcher's parameter list, checking operands against the pointer parameters."""
    import jax.numpy as jnp

    from ..launchers.cubin import OPERAND, Param, scalar

    pointers = sig.pointers
    if len(pointers) != len(operands):
        raise _error(
            expression,
            f" takes {len(pointers)} pointer parameter(s) ({', '.join(p.name for p in pointers)}), but the "
            f"call has {n_inputs} input(s) and {len(operands) - n_inputs} output(s): inputs, then outputs, "
            "map to the pointer parameters in order",
        )
    check_scalar_names(sig, list(scalars), expression)
    params = []
    position = 0
    for p in sig.params:
        if not p.pointer:
            params.append(scalar(scalar_bytes(p, scalars[p.name], expression)))
            continue
        dtype = np.dtype(operands[position].dtype)
        if p.dtype is not None and np.dtype(jnp.dtype(p.dtype)) != dtype:
            role = f"input {position}" if position < n_inputs else f"output {position - n_inputs}"
            raise _error(
                expression,
                f": parameter {p.name!r} is {p.cxx_type!r}, but it receives {role}, of dtype {dtype.name}; "
                f"cast the array, or instantiate the template for {dtype.name}",
                parameter=p.name,
                dtype=dtype.name,
            )
        params.append(Param(OPERAND, position, max(dtype.itemsize, 1)))
        position += 1
    return params


def element_avals(avals: Sequence[Any], batch_dims: int) -> list[Any]:
    """One batch element of each operand: its shape without the first ``batch_dims`` dims."""
    from jax import ShapeDtypeStruct

    return [ShapeDtypeStruct(tuple(a.shape)[batch_dims:], a.dtype) for a in avals]


def architectures(requested: Sequence[str] | None) -> list[str]:
    """The ``sm_XX`` to compile for: those requested, else BRAINEVENT_CUDA_ARCH's, else those of
    the visible GPUs."""
    from .. import config
    from ..launchers.cubin import gpu_archs
    from ..toolchain.cuda_arch import resolve_archs

    if requested or (pinned := config.CUDA_ARCH.get()) is not None:  # the loaders' order
        return list(requested or (a.sm for a in resolve_archs(pinned=pinned)))
    how = "pass compute_capability='sm_90' (for example) to compile without one"
    return [a.sm for a in gpu_archs(None, "cuda_kernel", how)]


def prepare(
    source: KernelSource,
    expression: str,
    inputs: Sequence[Any],
    outputs: Sequence[Any],
    scalars: Mapping[str, Any],
    config: LaunchConfig,
    archs: Sequence[str] | None,
    per_batch_element: bool = False,
) -> tuple[str, dict[str, Any]]:
    """Compile (through the cache), register with the launcher; ``(FFI target, the call's attributes)``.
    ``per_batch_element``: the operands are one element of a batch, run once per element."""
    from ..launchers.cubin import Image, kernel_blob, register_kernel
    from ..toolchain.cuda_arch import one_arch
    from .cache import Request, compile_cached

    sig = signature_for(source, expression)
    operands = [*inputs, *outputs]
    params = operand_params(sig, expression, operands, len(inputs), scalars)
    images: dict[int, Image] = {}
    for arch in architectures(archs):  # sm_XX only: cubins, whose kernel has the same symbol in each
        compiled, _ = compile_cached(Request(source, (expression,), arch))
        images[one_arch(arch).cc] = Image(compiled.code, config.shared_mem)
    shapes = [tuple(int(d) for d in a.shape) for a in operands] if per_batch_element else None
    # The call carries its kernel: a program exported with it runs where it was never traced.
    entry = compiled.lowered[expression]
    blob = kernel_blob(entry, config.grid, config.block, params, len(operands), images, shapes)
    target, kernel_id = register_kernel("nvrtc", blob, entry)
    return target, {"kernel_id": np.int64(kernel_id), "kernel": blob}
