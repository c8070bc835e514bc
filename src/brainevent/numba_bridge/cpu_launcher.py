"""Building and feeding the compiled CPU handlers (one per operand count)."""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass

from .cpu_errors import add_receiver
from .cpu_launcher_source import CORE, entry_source
from .operands import Signature


@dataclass(frozen=True)
class CpuLauncher:
    target: str
    library: ctypes.CDLL


_lock = threading.Lock()
_launchers: dict[tuple[int, int], CpuLauncher] = {}


def cpu_launcher_for(n_inputs: int, n_outputs: int) -> CpuLauncher:
    key = (n_inputs, n_outputs)
    with _lock:
        found = _launchers.get(key)
        if found is not None:
            return found
        from ..loaders import load_cpp_inline

        module = load_cpp_inline(
            name=f"brainevent_numba_cpu_{n_inputs}i_{n_outputs}o",
            cpp_sources=[CORE, entry_source(n_inputs, n_outputs)],
        )
        library = ctypes.CDLL(str(module.path), mode=ctypes.RTLD_LOCAL)  # the handle XLA already uses
        library.be_numba_cpu_register.restype = ctypes.c_int
        library.be_numba_cpu_register.argtypes = [
            ctypes.c_int64,
            ctypes.c_int64,
            ctypes.c_char_p,
            ctypes.POINTER(ctypes.c_int64),
            ctypes.POINTER(ctypes.c_int64),
            ctypes.c_int64,
        ]
        add_receiver(library)
        found = CpuLauncher(module.targets["call"], library)
        _launchers[key] = found
        return found


def register_cfunc(
    launcher: CpuLauncher, kernel_id: int, address: int, name: str, signature: Signature
) -> None:
    operands = signature.operands
    n = max(len(operands), 1)
    launcher.library.be_numba_cpu_register(
        kernel_id,
        address,
        name.encode("utf-8", errors="replace"),
        (ctypes.c_int64 * n)(*[o.ndim for o in operands]),
        (ctypes.c_int64 * n)(*[o.itemsize for o in operands]),
        len(operands),
    )
