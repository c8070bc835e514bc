"""One NVRTC compile, in its worker process: source and name expressions in; a cubin (or PTX), the
kernels' lowered names and the headers read out, or a :class:`CompileError` quoting the user's line
(the program is named after the user's file, or ``<inline>``). The cache is :mod:`.cache`."""

from __future__ import annotations

import errno
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

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
    """What every compile passes before the user's options. NVRTC searches an inline source's quoted
    includes in the working directory: the worker's own (``--no-source-include`` would also stop a
    header's quoted includes from being found beside it, as cooperative groups' are)."""
    return [f"--gpu-architecture={arch}", *(f"-I{d}" for d in include_dirs)]


def compile_source(
    source: bytes,
    source_name: str,
    name_expressions: Sequence[str],
    arch: str,
    options: Sequence[str],
    workdir: Path,
    *,
    traced: bool = True,
) -> tuple[Compiled | None, str, list[str] | None]:
    """``(compiled, log, headers read)``: ``compiled`` None when NVRTC rejected the source, the
    headers None when NVRTC did not say. ``options`` are complete (:func:`base_options`); ``workdir``
    is private. ``traced=False`` (the source includes nothing): no time trace (10-20 ms) and no
    headers. A source that includes anything uses precompiled headers (pch.py) unless it asks itself."""
    from . import pch, process
    from .worker import ERROR_COMPILATION, SUCCESS, TRACE_WRITE_FAILED

    kind = "cubin" if arch.startswith("sm_") else "ptx"
    trace = workdir / "nvrtc-time-trace"  # NVRTC writes <name>.json
    own_pch = any("pch" in o for o in options if not o.startswith("-I"))
    with pch.session(b"include" in source and not own_pch) as pch_options:
        request = {
            "source": source,
            "name": source_name,
            "names": list(name_expressions),
            "options": [*options, *([f"--fdevice-time-trace={trace}"] if traced else [])],
            "pch": pch_options,
            "kind": kind,
            "cwd": str(workdir),
        }
        started_ns = time.time_ns()
        try:
            reply = process.request(request, f"{source_name} for {arch}")
        except ToolchainError:  # NVRTC fails in its own ways to write on a full disk (an abort, say)
            _raise_if_full(workdir)
            raise
        log = reply["log"].decode("utf-8", "replace").rstrip("\x00")
        read = headers_read(trace, workdir) if traced else []
        if pch_options:  # not for a user's own -pch: NVRTC's notes are theirs to read
            log, read = pch.account(log, read, started_ns)
    if reply["result"] == ERROR_COMPILATION:
        return None, log, None
    if reply["result"] in TRACE_WRITE_FAILED:
        _raise_if_full(workdir)
    if reply["result"] != SUCCESS:  # e.g. NVRTC_ERROR_INVALID_OPTION: an option or architecture it rejects
        major, minor = process.nvrtc_info().version
        error = (reply["error"] or b"").decode(errors="replace")
        raise ToolchainError(
            f"NVRTC {major}.{minor} refused the compile of {source_name} for {arch}: {error}. "
            f"{log.strip() or '(no log)'} Options: {list(options)}. Check the options= given, and "
            "that this NVRTC supports the architecture (CUDA 13 starts at sm_75).",
            compiler="nvrtc",
            command=list(options),
        )
    return Compiled(reply["code"], kind, reply["lowered"], log), log, read


# The time trace's event for each header NVRTC's front end opened: the record of what it read.
TRACE_EVENT = "Processing Header File"


def headers_read(trace: Path, workdir: Path) -> list[str] | None:
    """The headers a compile opened, by its trace's events; None when it has none (a trace this reader
    does not know: NVRTC always opens a built-in one). A relative name without a file in ``workdir``
    is a built-in header."""
    import json

    written = next((t for t in (Path(f"{trace}.json"), trace) if t.is_file()), None)
    try:
        events = json.loads(written.read_bytes()).get("traceEvents", []) if written else []
        named = [e.get("args", {}).get("detail") for e in events if e.get("name") == TRACE_EVENT]
    except (OSError, ValueError, AttributeError):
        return None
    if not named:
        return None
    names = dict.fromkeys(n for n in named if isinstance(n, str) and n)
    here = [os.path.join(workdir, n) for n in names if not os.path.isabs(n)]
    return [n for n in names if os.path.isabs(n)] + [p for p in here if os.path.isfile(p)]


def _raise_if_full(directory: Path) -> None:
    """ENOSPC (a CacheError for the caller) when the disk holding ``directory`` is full."""
    try:
        full = os.statvfs(directory).f_bavail == 0
    except OSError:
        return
    if full:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(directory))


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
    from ..build.diagnostics import numbered_lines

    return where + "\n" + numbered_lines(lines, number, after=1)


# CCCL headers with host parts (kernel launches, allocation, the C++ standard library), which
# NVRTC rejects, by prefix, and what a kernel includes instead (docs/nvrtc.md lists what works).
_HOST_SIDE = {
    "cub/cub.cuh": "the block- or warp-level header of what it uses, e.g. <cub/block/block_reduce.cuh> "
    "or <cub/warp/warp_reduce.cuh>",
    "cub/device/": "CUB's block- or warp-level headers (<cub/block/block_reduce.cuh>, "
    "<cub/warp/warp_scan.cuh>): device-wide algorithms are launched from the host",
    "thrust/": "<cuda/std/...> (cuda::std::array, cuda::std::plus, ...) or CUB's block- or warp-level "
    "headers (<cub/block/block_reduce.cuh>): Thrust's algorithms run from the host",
}
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^<>"\n]+)[>"]', re.M)
# What NVRTC's log says on meeting host code; CCCL 3.5 (CUDA 13.3's wheel) refuses it with an #error.
_HOST_ONLY = ("not allowed in JIT mode", "cannot open source file", "not supported when compiling with NVRTC")


def _host_side_hint(log: str, source: KernelSource) -> str:
    """What to include instead of a host-side CCCL header the source includes, when NVRTC's
    log says it met host code; empty otherwise."""
    met_host_code = any(what in log for what in _HOST_ONLY)
    for header in _INCLUDE.findall(source.text) if met_host_code else ():
        for prefix, instead in _HOST_SIDE.items():
            if header.startswith(prefix):
                why = "holds host code, which NVRTC (device code only) cannot compile"
                return f"<{header}> {why}; include {instead} instead.\n"
    return ""


def compile_error(log: str, source: KernelSource, arch: str, kernel: str, log_path: Path) -> CompileError:
    """The error for a failed compile of ``source``, naming it as the user knows it; the full
    log is also at ``log_path``."""
    found = next((m for raw in log.splitlines() if (m := _PLACE.match(raw.strip()))), None)
    if found is not None:
        first = _where(found, source)
    else:
        first = (log.strip().splitlines() or ["(NVRTC gave no log)"])[0]
    message = (
        f"NVRTC could not compile {source.where} for {arch} (kernel {kernel!r}):\n"
        f"{_host_side_hint(log, source)}{first}\n\nNVRTC's log:\n{log.rstrip()}\n\nFull log: {log_path}"
    )
    return CompileError(
        message,
        module=source.program_name,
        log=log,
        log_path=str(log_path),
        first_error=first,
        kernel=kernel,
        backend="nvrtc",
        platform="cuda",
    )
