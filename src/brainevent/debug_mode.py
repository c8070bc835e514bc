"""Debug builds: ``debug=True`` on a loader, or ``BRAINEVENT_DEBUG=1`` for every load.

A debug build defines ``BE_DEBUG=1`` (``BE::Tensor::at<T>()`` checks every index and dtype),
adds ``-g`` (and ``-lineinfo`` for CUDA device code, so compute-sanitizer names source lines)
and ``-D_GLIBCXX_ASSERTIONS`` (bounds-checked ``std::vector::operator[]`` and friends), and
compiles at ``-O0`` (``load_options.make_options`` applies them). The flags are part of the
cache key, so debug and release builds of a module live side by side.
"""

from __future__ import annotations

import os
from typing import Any

from .errors import SpecError
from .platforms.devices import BUILD_PLATFORMS

__all__ = ["DEBUG_ENV", "DEBUG_FLAGS", "check_debug"]

DEBUG_ENV = "BRAINEVENT_DEBUG"
DEBUG_FLAGS = {build: p.debug_flags for build, p in BUILD_PLATFORMS.items()}


def check_debug(debug: Any) -> bool:
    """The ``debug`` keyword as a bool; None reads ``BRAINEVENT_DEBUG``."""
    if debug is None:
        return os.environ.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    if not isinstance(debug, bool):
        raise SpecError(f"debug={debug!r} must be True, False or None (None: read {DEBUG_ENV}).", value=debug)
    return debug
