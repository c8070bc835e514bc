"""The per-process memo of prepared Numba kernels: one compile and registration per key."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

# What a preparation gives: the FFI target, the kernel id, and objects to keep alive with the
# entry (the kernel itself, so that its id() in a key cannot be reused while the entry lives,
# and anything the registered launcher points into).
Made = tuple[str, int, tuple[Any, ...]]


class PreparedKernels:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[Hashable, Made] = {}

    def get_or_make(self, key: Hashable, make: Callable[[], Made]) -> tuple[str, int]:
        """``(target, kernel id)`` for ``key``, from ``make()`` the first time."""
        with self._lock:
            hit = self._entries.get(key)
        if hit is None:
            hit = make()  # outside the lock: compiling takes a while
            with self._lock:
                self._entries[key] = hit
        return hit[0], hit[1]
