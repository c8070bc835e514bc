"""The compiled CPU handlers that call Numba ``cfunc``s (brainevent/numba_cpu_launcher.h), and
what a function raised carried into the error of the XLA call that ran it.

Numba's ``cfunc`` wrapper cannot return an exception: it reports it through
``sys.unraisablehook`` (on the thread that ran it, holding the GIL) and returns 0. Our hook
hands the exception's text to the compiled handler that is running the function on this thread
(``be_numba_cpu_raised``), which turns it into the call's error. Reports from any other cfunc
go to the hook that was there before.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Callable
from typing import Any

from ..calls.operands import Signature
from .launcher import I64, P64, Launcher, LauncherCache, LauncherSpec, int64s

_NUMBA_CPU_CONTEXT = "<numba.core.cpu.CPUContext"

_lock = threading.Lock()
_receivers: list[Callable[[bytes], int]] = []  # be_numba_cpu_raised of each handler library
_previous: Callable[[Any], None] | None = None  # the hook before ours; set when ours goes in


def _hook(unraisable: Any) -> None:
    obj, exc = unraisable.object, unraisable.exc_value
    if isinstance(obj, str) and obj.startswith(_NUMBA_CPU_CONTEXT):
        text = f"{type(exc).__name__}: {exc}" if exc is not None else str(unraisable.exc_type)
        data = text.encode("utf-8", errors="replace")
        if any(receiver(data) for receiver in list(_receivers)):
            return
    if _previous is not None:
        _previous(unraisable)


def add_receiver(library: ctypes.CDLL) -> None:
    """Route exceptions raised inside ``library``'s Numba entries to it; installs the hook once."""
    global _previous
    with _lock:
        _receivers.append(library.be_numba_cpu_raised)
        if _previous is None:
            _previous = sys.unraisablehook
            sys.unraisablehook = _hook


_SPEC = LauncherSpec(
    header="numba_cpu_launcher.h",
    library_prefix="brainevent_numba_cpu",
    function="call",
    core_call="be_numba_cpu::call_kernel",
    api={
        "be_numba_cpu_register": (ctypes.c_int, [I64, I64, ctypes.c_char_p, P64, P64, I64]),
        "be_numba_cpu_raised": (ctypes.c_int, [ctypes.c_char_p]),
    },
    handler="be_numba_cpu_handler",  # calls skip the generic decoder: a loop step is tens of ns
)
cpu_launcher_for = LauncherCache(_SPEC, setup=add_receiver).get


def register_cfunc(launcher: Launcher, kernel_id: int, address: int, name: str, signature: Signature) -> None:
    label, operands = name.encode("utf-8", errors="replace"), signature.operands
    ranks, itemsizes = int64s([o.ndim for o in operands]), int64s([o.itemsize for o in operands])
    launcher.library.be_numba_cpu_register(kernel_id, address, label, ranks, itemsizes, len(operands))
