"""Building, loading and feeding the compiled Numba-CUDA launchers (one per operand count)."""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass

from .cuda_launcher_source import CORE, entry_source
from .launch_config import LaunchConfig
from .operands import Signature


@dataclass(frozen=True)
class Launcher:
    target: str
    library: ctypes.CDLL


_lock = threading.Lock()
_launchers: dict[tuple[int, int], Launcher] = {}


def launcher_for(n_inputs: int, n_outputs: int) -> Launcher:
    """The launcher for this arity; compiled once per machine (the loader caches by content)."""
    key = (n_inputs, n_outputs)
    with _lock:
        found = _launchers.get(key)
        if found is not None:
            return found
        from ..cuda_loaders import load_cuda_inline

        module = load_cuda_inline(
            name=f"brainevent_numba_cuda_{n_inputs}i_{n_outputs}o",
            cuda_sources=[CORE, entry_source(n_inputs, n_outputs)],
            extra_ldflags=["-ldl"],
        )
        library = ctypes.CDLL(str(module.path), mode=ctypes.RTLD_LOCAL)  # the handle XLA already uses
        library.be_numba_cuda_register.restype = ctypes.c_int
        library.be_numba_cuda_register.argtypes = [
            ctypes.c_int64,
            ctypes.c_char_p,
            ctypes.POINTER(ctypes.c_int64),
            ctypes.c_int64,
            ctypes.POINTER(ctypes.c_int64),
            ctypes.POINTER(ctypes.c_int64),
            ctypes.c_int64,
        ]
        library.be_numba_cuda_add_image.restype = None
        library.be_numba_cuda_add_image.argtypes = [
            ctypes.c_int64,
            ctypes.c_int64,
            ctypes.c_char_p,
            ctypes.c_int64,
        ]
        library.be_numba_cuda_preload.restype = ctypes.c_char_p
        library.be_numba_cuda_preload.argtypes = [ctypes.c_int64]
        found = Launcher(module.targets["launch"], library)
        _launchers[key] = found
        return found


def _int64s(values: list[int]) -> ctypes.Array[ctypes.c_int64]:
    return (ctypes.c_int64 * max(len(values), 1))(*values)


def register_kernel(
    launcher: Launcher,
    kernel_id: int,
    entry: str,
    images: dict[int, bytes],
    config: LaunchConfig,
    cooperative: bool,
    signature: Signature,
) -> None:
    """Hands a compiled kernel to the launcher's table and loads it on the active devices."""
    lib = launcher.library
    operands = signature.operands
    fresh = lib.be_numba_cuda_register(
        kernel_id,
        entry.encode(),
        _int64s(list(config.as_ints())),
        int(cooperative),
        _int64s([o.ndim for o in operands]),
        _int64s([o.itemsize for o in operands]),
        len(operands),
    )
    if fresh != 0:
        return  # same content already registered: nothing new to load
    for cc, image in images.items():
        lib.be_numba_cuda_add_image(kernel_id, cc, image, len(image))
    error = lib.be_numba_cuda_preload(kernel_id)
    if error:
        from ..errors import LoadError

        raise LoadError(f"cannot load Numba kernel {entry}: {error.decode(errors='replace')}")
