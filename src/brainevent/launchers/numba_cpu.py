"""The compiled CPU handlers that call Numba ``cfunc``s (brainevent/numba_cpu_launcher.h)."""

from __future__ import annotations

import ctypes

from ..calls.operands import Signature
from .library import Launcher, LauncherCache, LauncherSpec, int64s
from .numba_cpu_errors import add_receiver

_i64, _p64 = ctypes.c_int64, ctypes.POINTER(ctypes.c_int64)
_SPEC = LauncherSpec(
    header="numba_cpu_launcher.h",
    library_prefix="brainevent_numba_cpu",
    function="call",
    core_call="be_numba_cpu::call_kernel",
    cuda=False,
    api={"be_numba_cpu_register": (ctypes.c_int, [_i64, _i64, ctypes.c_char_p, _p64, _p64, _i64])},
    handler="be_numba_cpu_handler",  # calls skip the generic decoder: a loop step is tens of ns
)
_launchers = LauncherCache(_SPEC, setup=add_receiver)

CpuLauncher = Launcher


def cpu_launcher_for(n_inputs: int, n_outputs: int) -> Launcher:
    return _launchers.get(n_inputs, n_outputs)


def register_cfunc(launcher: Launcher, kernel_id: int, address: int, name: str, signature: Signature) -> None:
    operands = signature.operands
    launcher.library.be_numba_cpu_register(
        kernel_id,
        address,
        name.encode("utf-8", errors="replace"),
        int64s([o.ndim for o in operands]),
        int64s([o.itemsize for o in operands]),
        len(operands),
    )
