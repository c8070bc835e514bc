"""NVRTC's own process, started by process.py as ``python -I -S worker.py LIBRARY`` (the standard
library only: ready in milliseconds; a crash in NVRTC ends it, not the user's process). Requests and
replies are length-prefixed ``marshal`` frames on stdin and stdout; the first says which NVRTC bound."""

from __future__ import annotations

import ctypes
import marshal
import os
import struct
import sys

TYPE_CHECKING = False  # typing is not imported: the worker's start is on a first compile's path
if TYPE_CHECKING:
    from typing import Any

SUCCESS, ERROR_COMPILATION = 0, 6  # nvrtcResult codes
TRACE_WRITE_FAILED = (12, 17)  # NVRTC_ERROR_TIME_FILE_WRITE_FAILED, ..._TIME_TRACE_FILE_WRITE_FAILED
MIN_RELEASE = (12, 8)  # the first with --fdevice-time-trace, the record of what a compile read

_P, _S, _C = ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t), ctypes.c_char_p
_CC, _I = ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int)
# name -> (argtypes, the CUDA release that added it); every function returns an nvrtcResult.
API: dict[str, tuple[list[Any], str]] = {
    "nvrtcVersion": ([_I, _I], "7.0"),
    "nvrtcCreateProgram": ([ctypes.POINTER(_P), _C, _C, ctypes.c_int, _CC, _CC], "7.0"),
    "nvrtcDestroyProgram": ([ctypes.POINTER(_P)], "7.0"),
    "nvrtcCompileProgram": ([_P, ctypes.c_int, _CC], "7.0"),
    "nvrtcAddNameExpression": ([_P, _C], "8.0"),
    "nvrtcGetLoweredName": ([_P, _C, _CC], "8.0"),
    **{f"nvrtcGet{what}Size": ([_P, _S], "7.0") for what in ("ProgramLog", "PTX")},
    **{f"nvrtcGet{what}": ([_P, _C], "7.0") for what in ("ProgramLog", "PTX")},
    "nvrtcGetCUBINSize": ([_P, _S], "11.1"),
    "nvrtcGetCUBIN": ([_P, _C], "11.1"),
}
# Precompiled headers (CUDA 12.8): used where present, never required.
PCH_API: dict[str, list[Any]] = {
    "nvrtcGetPCHCreateStatus": [_P],
    "nvrtcGetPCHHeapSizeRequired": [_P, _S],
    "nvrtcSetPCHHeapSize": [ctypes.c_size_t],
}
PCH_HEAP_EXHAUSTED = 14  # NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED
# The PCH heap is reserved address space until a PCH fills it: 1 GiB up front (CCCL's block CUB
# needs 200-350 MB), grown once to what NVRTC says it needs, never past 4 GiB (memory stays bounded).
PCH_HEAP, PCH_HEAP_MAX, PCH_HEAP_STEP = 1 << 30, 4 << 30, 64 << 20


def write_frame(fd: int, value: Any) -> None:
    data = marshal.dumps(value)
    view = memoryview(struct.pack("<Q", len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exactly(fd: int, size: int) -> bytes:
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError  # the other end closed
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> Any:
    return marshal.loads(_read_exactly(fd, struct.unpack("<Q", _read_exactly(fd, 8))[0]))


def bind(path: str) -> tuple[ctypes.CDLL | None, dict[str, Any]]:
    """The library, its functions typed, and what the parent is told of it: its path and
    version, and the functions it lacks with the release that added each."""
    try:
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
    except OSError as exc:
        return None, {"error": str(exc)}
    missing = {name: release for name, (_, release) in API.items() if not hasattr(lib, name)}
    typed = {name: argtypes for name, (argtypes, _) in API.items() if name not in missing}
    pch = all(hasattr(lib, name) for name in PCH_API)
    for name, argtypes in {**typed, **(PCH_API if pch else {})}.items():
        getattr(lib, name).restype, getattr(lib, name).argtypes = ctypes.c_int, argtypes
    if pch:
        lib.nvrtcSetPCHHeapSize(PCH_HEAP)
    lib.nvrtcGetErrorString.restype, lib.nvrtcGetErrorString.argtypes = _C, [ctypes.c_int]
    major, minor = ctypes.c_int(), ctypes.c_int()
    if "nvrtcVersion" not in missing:
        lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    hello = {"path": os.path.realpath(path), "version": (major.value, minor.value), "missing": missing}
    return lib, {**hello, "pch": pch}


def _read(lib: ctypes.CDLL, program: ctypes.c_void_p, what: str) -> bytes:
    """The program's log, CUBIN or PTX, through ``nvrtcGet<what>Size`` and ``nvrtcGet<what>``."""
    size = ctypes.c_size_t()
    getattr(lib, f"nvrtcGet{what}Size")(program, ctypes.byref(size))
    buffer = ctypes.create_string_buffer(max(size.value, 1))
    getattr(lib, f"nvrtcGet{what}")(program, buffer)
    return buffer.raw[: size.value]


def compile_program(lib: ctypes.CDLL, request: dict[str, Any]) -> dict[str, Any]:
    """One compile of ``request`` in its ``cwd``; the reply: result code, its text, log, code, lowered
    names. A PCH (``request["pch"]``) that ran out of heap is made again, once, with the heap asked for."""
    reply = _compile(lib, request)
    needed = reply.pop("pch_needed", 0)
    if 0 < needed <= PCH_HEAP_MAX:
        lib.nvrtcSetPCHHeapSize(-(-needed // PCH_HEAP_STEP) * PCH_HEAP_STEP)
        reply = _compile(lib, request)
        reply.pop("pch_needed", 0)
    return reply


def _compile(lib: ctypes.CDLL, request: dict[str, Any]) -> dict[str, Any]:
    os.chdir(request["cwd"])  # relative names resolve in the build's own directory, never the user's
    options, program = [*request["options"], *request.get("pch", ())], ctypes.c_void_p()
    result = lib.nvrtcCreateProgram(
        ctypes.byref(program), request["source"], request["name"].encode(), 0, None, None
    )
    reply: dict[str, Any] = {"result": result, "code": b"", "lowered": {}, "log": b""}
    if result != SUCCESS:
        return {**reply, "error": lib.nvrtcGetErrorString(result)}
    try:
        for expression in request["names"]:
            lib.nvrtcAddNameExpression(program, expression.encode())
        strings = (ctypes.c_char_p * len(options))(*(o.encode() for o in options))
        reply["result"] = result = lib.nvrtcCompileProgram(program, len(options), strings)
        reply.update(error=lib.nvrtcGetErrorString(result), log=_read(lib, program, "ProgramLog"))
        for expression in request["names"] if result == SUCCESS else ():
            lowered = ctypes.c_char_p()
            result = lib.nvrtcGetLoweredName(program, expression.encode(), ctypes.byref(lowered))
            if result != SUCCESS:  # e.g. an expression NVRTC did not take: say so, not an empty symbol
                return {**reply, "result": result, "error": lib.nvrtcGetErrorString(result)}
            reply["lowered"][expression] = (lowered.value or b"").decode()
        if result == SUCCESS:
            reply["code"] = _read(lib, program, request["kind"].upper())
        if request.get("pch") and lib.nvrtcGetPCHCreateStatus(program) == PCH_HEAP_EXHAUSTED:
            needed = ctypes.c_size_t()
            lib.nvrtcGetPCHHeapSizeRequired(program, ctypes.byref(needed))
            reply["pch_needed"] = needed.value
        return reply
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(program))


def main() -> int:
    out = os.dup(1)
    os.dup2(2, 1)  # what NVRTC itself prints goes to stderr, never into a frame
    lib, hello = bind(sys.argv[1])
    write_frame(out, hello)
    while lib is not None and not hello["missing"]:
        try:
            request = read_frame(0)
        except EOFError:  # the parent is done, or gone
            return 0
        write_frame(out, compile_program(lib, request if hello["pch"] else {**request, "pch": []}))
    return 1


if __name__ == "__main__":
    sys.exit(main())
