"""libnvrtc, found through cuda-pathfinder (pip wheels, conda, then a system CUDA) and bound with
ctypes by the first compile, once per process (a cache hit never gets here).
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass

from ..errors import ToolchainError

# NVRTC's result codes are ints; 0 is NVRTC_SUCCESS, 6 NVRTC_ERROR_COMPILATION.
SUCCESS = 0
ERROR_COMPILATION = 6

_c_char_pp = ctypes.POINTER(ctypes.c_char_p)
_size_p = ctypes.POINTER(ctypes.c_size_t)
_int_p = ctypes.POINTER(ctypes.c_int)
_prog_p = ctypes.POINTER(ctypes.c_void_p)

# name -> argtypes; every function returns an nvrtcResult (int).
_API: dict[str, list[object]] = {
    "nvrtcVersion": [_int_p, _int_p],
    "nvrtcCreateProgram": [_prog_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, _c_char_pp, _c_char_pp],
    "nvrtcDestroyProgram": [_prog_p],
    "nvrtcAddNameExpression": [ctypes.c_void_p, ctypes.c_char_p],
    "nvrtcCompileProgram": [ctypes.c_void_p, ctypes.c_int, _c_char_pp],
    "nvrtcGetLoweredName": [ctypes.c_void_p, ctypes.c_char_p, _c_char_pp],
}
for _what in ("ProgramLog", "CUBIN", "PTX"):  # each read as a size, then the bytes
    _API[f"nvrtcGet{_what}Size"] = [ctypes.c_void_p, _size_p]
    _API[f"nvrtcGet{_what}"] = [ctypes.c_void_p, ctypes.c_char_p]


@dataclass(frozen=True)
class Nvrtc:
    """The bound library: ``lib`` with its functions typed, where it came from, its version."""

    lib: ctypes.CDLL
    path: str
    found_via: str  # cuda-pathfinder's words: "site-packages", "conda", "CUDA_HOME", "system-search"
    version: tuple[int, int]

    def error_text(self, code: int) -> str:
        text = self.lib.nvrtcGetErrorString(code)
        return text.decode(errors="replace") if text else f"NVRTC error {code}"

    def call(self, function: str, *args: object) -> None:
        """``lib.<function>(*args)``; a ToolchainError when it does not succeed."""
        code = getattr(self.lib, function)(*args)
        if code != SUCCESS:
            message = f"NVRTC failed in {function}: {self.error_text(code)} (libnvrtc {self.path})"
            raise ToolchainError(message, compiler="nvrtc")


@functools.cache
def nvrtc() -> Nvrtc:
    """The process's libnvrtc, located and bound on first use."""
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib

        loaded = load_nvidia_dynamic_lib("nvrtc")
    except Exception as exc:  # DynamicLibNotFoundError and its kin, or no cuda-pathfinder
        raise ToolchainError(
            "cannot find libnvrtc, which brainevent.cuda_kernel compiles with: install NVIDIA's wheel "
            "(`pip install nvidia-cuda-nvrtc` for CUDA 13, `pip install nvidia-cuda-nvrtc-cu12` for CUDA 12; "
            "jax[cuda12] and jax[cuda13] already bring it) or point CUDA_HOME at a CUDA toolkit. "
            f"cuda-pathfinder said: {exc}",
            compiler="nvrtc",
        ) from exc
    path = str(loaded.abs_path or "libnvrtc")
    lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
    for name, argtypes in _API.items():
        getattr(lib, name).restype, getattr(lib, name).argtypes = ctypes.c_int, argtypes
    lib.nvrtcGetErrorString.restype, lib.nvrtcGetErrorString.argtypes = ctypes.c_char_p, [ctypes.c_int]
    major, minor = ctypes.c_int(), ctypes.c_int()
    if lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)) != SUCCESS:
        raise ToolchainError(f"libnvrtc at {path} does not report its version", compiler="nvrtc")
    found_via = str(getattr(loaded, "found_via", "") or "unknown")
    return Nvrtc(lib, path, found_via, (major.value, minor.value))
