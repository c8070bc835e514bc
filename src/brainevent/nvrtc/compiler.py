"""One NVRTC compile: CUDA source and name expressions in, a cubin (or PTX) and the lowered
(mangled) names of the kernels out, or NVRTC's log as a :class:`CompileError` quoting the user's
line (the program is named after the user's file, or ``<inline>``, so NVRTC's ``<name>(<line>):
error`` maps back to it). No cache here: see :mod:`.cache`."""

from __future__ import annotations

import ctypes
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import CompileError, ToolchainError
from ..toolchain.cuda_arch import nvrtc_arch

if TYPE_CHECKING:
    from .source import KernelSource


@dataclass(frozen=True)
class Compiled:
    code: bytes  # a cubin, or PTX text ending in NUL
    kind: str  # "cubin" or "ptx"
    lowered: dict[str, str]  # name expression -> the kernel's symbol in ``code``
    log: str = field(default="", compare=False)


# "sm_90" (a cubin) or "compute_90" (PTX) from any spelling; ArchError for a bad one.
parse_arch = nvrtc_arch


def base_options(arch: str, include_dirs: Sequence[str]) -> list[str]:
    """What every compile passes before the user's options."""
    return [f"--gpu-architecture={arch}", *(f"-I{d}" for d in include_dirs)]


def compile_source(
    source: str,
    source_name: str,
    name_expressions: Sequence[str],
    arch: str,
    options: Sequence[str],
) -> tuple[Compiled | None, str]:
    """``(compiled, log)``; ``compiled`` is None when NVRTC rejected the source. ``options`` are
    complete (see :func:`base_options`)."""
    from .library import ERROR_COMPILATION, nvrtc

    bound = nvrtc()
    program = ctypes.c_void_p()
    bound.call(
        "nvrtcCreateProgram", ctypes.byref(program), source.encode(), source_name.encode(), 0, None, None
    )
    try:
        for expression in name_expressions:
            bound.call("nvrtcAddNameExpression", program, expression.encode())
        strings = (ctypes.c_char_p * max(len(options), 1))(*(o.encode() for o in options))
        result = bound.lib.nvrtcCompileProgram(program, len(options), strings)
        log = _read(bound, program, "ProgramLog").decode(errors="replace").rstrip("\x00")
        if result == ERROR_COMPILATION:
            return None, log
        if result != 0:  # e.g. NVRTC_ERROR_INVALID_OPTION: an option or architecture it rejects
            raise ToolchainError(
                f"NVRTC {bound.version[0]}.{bound.version[1]} refused the compile of {source_name} for "
                f"{arch}: {bound.error_text(result)}. {log.strip() or '(no log)'} Options: {list(options)}. "
                "Check the options= given, and that this NVRTC supports the architecture (CUDA 13 starts "
                "at sm_75).",
                compiler="nvrtc",
                command=list(options),
            )
        lowered = {}
        for expression in name_expressions:
            name = ctypes.c_char_p()
            bound.call("nvrtcGetLoweredName", program, expression.encode(), ctypes.byref(name))
            lowered[expression] = (name.value or b"").decode()
        kind = "cubin" if arch.startswith("sm_") else "ptx"
        return Compiled(_read(bound, program, kind.upper()), kind, lowered, log), log
    finally:
        bound.lib.nvrtcDestroyProgram(ctypes.byref(program))


def _read(bound: Any, program: ctypes.c_void_p, what: str) -> bytes:
    """The program's log, CUBIN or PTX (``what``), through ``nvrtcGet<what>Size`` and ``nvrtcGet<what>``."""
    size = ctypes.c_size_t()
    bound.call(f"nvrtcGet{what}Size", program, ctypes.byref(size))
    buffer = ctypes.create_string_buffer(max(size.value, 1))
    bound.call(f"nvrtcGet{what}", program, buffer)
    return buffer.raw[: size.value]


_PLACE = re.compile(
    r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<kind>(?:catastrophic )?error|fatal error)\b(?P<rest>.*)$"
)


def _where(found: re.Match[str], source: KernelSource) -> str:
    """``<file>, line <n>: <error>``, then the offending line with one line on each side."""
    file, number = found.group("file"), int(found.group("line"))
    ours = file == source.program_name
    where = f"{source.where if ours else file}, line {number}: {found['kind']}{found['rest']}"
    try:
        lines = (source.text if ours else Path(file).read_text(errors="replace")).splitlines()
    except OSError:
        return where
    if not 1 <= number <= len(lines):
        return where
    first, last = max(number - 1, 1), min(number + 1, len(lines))
    width = len(str(last))
    quoted = (
        f"  {'>' if n == number else ' '} {n:>{width}} | {lines[n - 1]}" for n in range(first, last + 1)
    )
    return where + "\n" + "\n".join(quoted)


def compile_error(log: str, source: KernelSource, arch: str, kernel: str) -> CompileError:
    """The error for a failed compile of ``source``, naming it as the user knows it."""
    found = next((m for raw in log.splitlines() if (m := _PLACE.match(raw.strip()))), None)
    if found is not None:
        first = _where(found, source)
    else:
        first = (log.strip().splitlines() or ["(NVRTC gave no log)"])[0]
    message = (
        f"NVRTC could not compile {source.where} for {arch} (kernel {kernel!r}):\n{first}\n\n"
        f"NVRTC's log:\n{log.rstrip()}"
    )
    return CompileError(message, log=log, first_error=first, kernel=kernel, backend="nvrtc", platform="cuda")
