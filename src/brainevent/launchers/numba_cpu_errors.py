"""Carrying what a Numba CPU function raised into the error of the XLA call that ran it.

Numba's ``cfunc`` wrapper cannot return an exception: it reports it through
``sys.unraisablehook`` (on the thread that ran it, holding the GIL) and returns 0. The hook
installed here hands the exception's text to the compiled handler that is running the
function on this thread (``be_numba_cpu_raised``), which turns it into the call's error.
Reports from any other cfunc go to the hook that was there before.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Callable
from typing import Any

_NUMBA_CPU_CONTEXT = "<numba.core.cpu.CPUContext"

_lock = threading.Lock()
_receivers: list[Callable[[bytes], int]] = []  # be_numba_cpu_raised of each handler library
_previous: Callable[[Any], None] | None = None  # the hook before ours; set when ours goes in


def _deliver(text: str) -> bool:
    data = text.encode("utf-8", errors="replace")
    return any(receiver(data) for receiver in list(_receivers))


def _describe(unraisable: Any) -> str:
    exc = unraisable.exc_value
    return f"{type(exc).__name__}: {exc}" if exc is not None else str(unraisable.exc_type)


def _hook(unraisable: Any) -> None:
    obj = unraisable.object
    ours = isinstance(obj, str) and obj.startswith(_NUMBA_CPU_CONTEXT)
    if ours and _deliver(_describe(unraisable)):
        return
    if _previous is not None:
        _previous(unraisable)


def add_receiver(library: ctypes.CDLL) -> None:
    """Route exceptions raised inside ``library``'s Numba entries to it; installs the hook once."""
    global _previous
    receiver = library.be_numba_cpu_raised
    receiver.restype = ctypes.c_int
    receiver.argtypes = [ctypes.c_char_p]
    with _lock:
        _receivers.append(receiver)
        if _previous is None:
            _previous = sys.unraisablehook
            sys.unraisablehook = _hook
