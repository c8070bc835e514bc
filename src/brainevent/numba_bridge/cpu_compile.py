"""Wrapping an ``@njit`` function in a ``cfunc`` that takes raw buffer pointers and shapes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..calls.operands import Signature


@dataclass(frozen=True)
class CompiledEntry:
    address: int
    llvm_ir: str
    cfunc: Any  # kept alive: XLA calls its machine code


def _entry_source(signature: Signature) -> str:
    """``entry(data, shapes)``: NumPy-like views of each buffer, then the user's function; 1 if it
    returned, 0 if it raised."""
    lines = ["def entry(data, shapes):"]
    offset = 0
    names = []
    for i, operand in enumerate(signature.operands):
        dims = ", ".join(f"shapes[{offset + j}]" for j in range(operand.ndim))
        shape = f"({dims},)" if operand.ndim == 1 else f"({dims})"
        lines.append(f"    a{i} = carray(data[{i}], {shape}, dtype{i})")
        names.append(f"a{i}")
        offset += operand.ndim
    lines.append(f"    func({', '.join(names)})")
    # 1 on success: when func raises, Numba's cfunc wrapper reports the exception through
    # sys.unraisablehook and returns 0 instead.
    lines.append("    return 1")
    return "\n".join(lines) + "\n"


def compile_entry(func: Any, signature: Signature) -> CompiledEntry:
    import numba
    from numba import types

    namespace: dict[str, Any] = {"carray": numba.carray, "func": func}
    for i, operand in enumerate(signature.operands):
        namespace[f"dtype{i}"] = operand.dtype
    # Generated code, compiled by Numba; nothing from the user reaches this text.
    exec(compile(_entry_source(signature), "<brainevent numba entry>", "exec"), namespace)
    sig = types.int32(types.CPointer(types.voidptr), types.CPointer(types.int64))
    compiled = numba.cfunc(sig)(namespace["entry"])  # cfuncs are always nopython
    return CompiledEntry(int(compiled.address or 0), compiled.inspect_llvm(), compiled)
