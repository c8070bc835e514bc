"""NVRTC's own process: it binds libnvrtc and compiles the programs its parent sends, one at a time.

The parent (nvrtc/process.py) starts it with its own interpreter as ``python -I -S worker.py
LIBRARY``: it imports only the standard library, so it is ready in milliseconds, and a crash
inside NVRTC ends this process, not the user's. Requests and replies are length-prefixed
``marshal`` frames on stdin and stdout (the same interpreter writes and reads them); the first
frame says which NVRTC was bound. The parent imports this module too, for its tables.
"""

from __future__ import annotations

import ctypes
import marshal
import os
import struct
import sys

TYPE_CHECKING = False  # typing is not imported: the worker's start is on a first compile's path
if TYPE_CHECKING:
    from typing import Any

# nvrtcResult codes.
SUCCESS, ERROR_INVALID_OPTION, ERROR_COMPILATION = 0, 5, 6
TRACE_WRITE_FAILED = (12, 17)  # NVRTC_ERROR_TIME_FILE_WRITE_FAILED, ..._TIME_TRACE_FILE_WRITE_FAILED

# The release a compile needs at least: the first with --fdevice-time-trace (compiler.py).
MIN_RELEASE = (12, 8)
SONAMES = ("libnvrtc.so.13", "libnvrtc.so.12")  # the system's loader search, newest first

_char_pp = ctypes.POINTER(ctypes.c_char_p)
_size_p = ctypes.POINTER(ctypes.c_size_t)
_int_p = ctypes.POINTER(ctypes.c_int)
_prog_p = ctypes.POINTER(ctypes.c_void_p)
# name -> (argtypes, the CUDA release that added it); every function returns an nvrtcResult.
API: dict[str, tuple[list[Any], str]] = {
    "nvrtcVersion": ([_int_p, _int_p], "7.0"),
    "nvrtcCreateProgram": (
        [_prog_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, _char_pp, _char_pp],
        "7.0",
    ),
    "nvrtcDestroyProgram": ([_prog_p], "7.0"),
    "nvrtcCompileProgram": ([ctypes.c_void_p, ctypes.c_int, _char_pp], "7.0"),
    "nvrtcAddNameExpression": ([ctypes.c_void_p, ctypes.c_char_p], "8.0"),
    "nvrtcGetLoweredName": ([ctypes.c_void_p, ctypes.c_char_p, _char_pp], "8.0"),
    "nvrtcGetProgramLogSize": ([ctypes.c_void_p, _size_p], "7.0"),
    "nvrtcGetProgramLog": ([ctypes.c_void_p, ctypes.c_char_p], "7.0"),
    "nvrtcGetPTXSize": ([ctypes.c_void_p, _size_p], "7.0"),
    "nvrtcGetPTX": ([ctypes.c_void_p, ctypes.c_char_p], "7.0"),
    "nvrtcGetCUBINSize": ([ctypes.c_void_p, _size_p], "11.1"),
    "nvrtcGetCUBIN": ([ctypes.c_void_p, ctypes.c_char_p], "11.1"),
}


def write_frame(fd: int, value: Any) -> None:
    data = marshal.dumps(value)
    view = memoryview(struct.pack("<Q", len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def read_exactly(fd: int, size: int) -> bytes | None:
    """``size`` bytes, or None when the other end closed first."""
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> Any:
    """The next frame's value; EOFError when the other end closed."""
    header = read_exactly(fd, 8)
    data = None if header is None else read_exactly(fd, struct.unpack("<Q", header)[0])
    if data is None:
        raise EOFError
    return marshal.loads(data)


def bind(path: str) -> tuple[ctypes.CDLL | None, dict[str, Any]]:
    """The library at ``path`` (empty: by soname, as the system's loader finds it), typed, and
    what the parent is told of it: path, version, and the functions it lacks with the release of each."""
    lib = None
    for name in [path] if path else SONAMES:
        try:
            lib = ctypes.CDLL(name, mode=ctypes.RTLD_LOCAL)
            break
        except OSError:
            continue
    if lib is None:
        return None, {"error": f"cannot load {path or ' or '.join(SONAMES)}"}
    if not path:  # where the loader found it
        with open("/proc/self/maps") as maps:
            mapped = (line.split()[-1] for line in maps if "/libnvrtc.so" in line)
            path = next(mapped, SONAMES[0])
    missing = {name: release for name, (_, release) in API.items() if not hasattr(lib, name)}
    for name, (argtypes, _) in API.items():
        if name not in missing:
            getattr(lib, name).restype, getattr(lib, name).argtypes = ctypes.c_int, argtypes
    major, minor = ctypes.c_int(), ctypes.c_int()
    if "nvrtcVersion" not in missing:
        lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    lib.nvrtcGetErrorString.restype, lib.nvrtcGetErrorString.argtypes = ctypes.c_char_p, [ctypes.c_int]
    return lib, {"path": os.path.realpath(path), "version": (major.value, minor.value), "missing": missing}


def _read(lib: ctypes.CDLL, program: ctypes.c_void_p, what: str) -> bytes:
    """The program's log, CUBIN or PTX, through ``nvrtcGet<what>Size`` and ``nvrtcGet<what>``."""
    size = ctypes.c_size_t()
    getattr(lib, f"nvrtcGet{what}Size")(program, ctypes.byref(size))
    buffer = ctypes.create_string_buffer(max(size.value, 1))
    getattr(lib, f"nvrtcGet{what}")(program, buffer)
    return buffer.raw[: size.value]


def compile_program(lib: ctypes.CDLL, request: dict[str, Any]) -> dict[str, Any]:
    """One compile: ``request`` holds source (bytes), name, names, options, kind and cwd (a
    directory of the parent's own, for NVRTC's files); the reply its result code, log, code and
    lowered names."""
    os.chdir(request["cwd"])  # relative names resolve in the build's own directory, never the user's
    options = request["options"]
    program = ctypes.c_void_p()
    reply: dict[str, Any] = {"code": b"", "lowered": {}}
    result = lib.nvrtcCreateProgram(
        ctypes.byref(program), request["source"], request["name"].encode(), 0, None, None
    )
    if result != SUCCESS:
        return {**reply, "result": result, "error": lib.nvrtcGetErrorString(result), "log": b""}
    try:
        for expression in request["names"]:
            lib.nvrtcAddNameExpression(program, expression.encode())
        strings = (ctypes.c_char_p * len(options))(*(o.encode() for o in options))
        result = lib.nvrtcCompileProgram(program, len(options), strings)
        reply.update(
            result=result, error=lib.nvrtcGetErrorString(result), log=_read(lib, program, "ProgramLog")
        )
        if result != SUCCESS:
            return reply
        for expression in request["names"]:
            lowered = ctypes.c_char_p()
            lib.nvrtcGetLoweredName(program, expression.encode(), ctypes.byref(lowered))
            reply["lowered"][expression] = (lowered.value or b"").decode()
        reply["code"] = _read(lib, program, request["kind"].upper())
        return reply
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(program))


def main() -> int:
    out = os.dup(1)
    os.dup2(2, 1)  # what NVRTC itself prints goes to stderr, never into a frame
    lib, hello = bind(sys.argv[1] if len(sys.argv) > 1 else "")
    write_frame(out, hello)
    if lib is None or hello["missing"]:
        return 1
    while True:
        try:
            request = read_frame(0)
        except EOFError:  # the parent is done, or gone
            return 0
        write_frame(out, compile_program(lib, request))


if __name__ == "__main__":
    sys.exit(main())
