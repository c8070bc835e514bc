"""Debug builds: ``debug=True`` on a loader, or ``BRAINEVENT_DEBUG=1`` for every load.

``-DBE_DEBUG=1`` (``BE::Tensor::at<T>()`` checks indices and dtypes), ``-g`` (``-lineinfo`` for
compute-sanitizer), ``-D_GLIBCXX_ASSERTIONS`` and ``-O0``; the flags key the cache, so debug and
release builds live side by side.
"""

from __future__ import annotations

import os
from typing import Any

from .errors import SpecError
from .platforms.devices import BUILD_PLATFORMS

DEBUG_ENV = "BRAINEVENT_DEBUG"
DEBUG_FLAGS = {build: p.debug_flags for build, p in BUILD_PLATFORMS.items()}


def check_debug(debug: Any) -> bool:
    """The ``debug`` keyword as a bool; None reads ``BRAINEVENT_DEBUG``."""
    if debug is None:
        return os.environ.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    if not isinstance(debug, bool):
        raise SpecError(f"debug={debug!r} must be True, False or None (None: read {DEBUG_ENV}).", value=debug)
    return debug
