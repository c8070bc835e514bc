"""Debug builds: ``debug=True`` on a loader, or ``BRAINEVENT_DEBUG=1`` for every load.

``-DBE_DEBUG=1`` (``BE::Tensor::at<T>()`` checks indices and dtypes), ``-g`` (``-lineinfo`` for
compute-sanitizer), ``-D_GLIBCXX_ASSERTIONS`` and ``-O0``; the flags key the cache, so debug and
release builds live side by side.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .errors import SpecError

DEBUG_ENV = "BRAINEVENT_DEBUG"
_CPU_FLAGS = ("-g", "-DBE_DEBUG=1", "-D_GLIBCXX_ASSERTIONS", "-fno-omit-frame-pointer")
_CUDA_FLAGS = ("-g", "-lineinfo", "-DBE_DEBUG=1", "-Xcompiler=-D_GLIBCXX_ASSERTIONS")


def debug_keywords(keywords: Mapping[str, Any], *, cuda: bool) -> dict[str, Any]:
    """``keywords`` without ``debug``; a debug build's flags added to ``extra_cflags``."""
    values = dict(keywords)
    debug = values.pop("debug", None)
    if debug is None:
        debug = os.environ.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    elif not isinstance(debug, bool):
        raise SpecError(f"debug={debug!r} must be True, False or None (None: read {DEBUG_ENV}).", value=debug)
    if debug:
        flags = _CUDA_FLAGS if cuda else _CPU_FLAGS
        values["extra_cflags"] = (*(values.get("extra_cflags") or ()), *flags)
        values["optimization_level"] = 0
    return values
