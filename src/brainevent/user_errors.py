"""Tracebacks of user errors end at the public call: the pipeline's frames under it say nothing
to act on. ``BRAINEVENT_FULL_TRACEBACK=1`` keeps them; a bug (not a BrainEventError) always does.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from .errors import BrainEventError

FULL_TRACEBACK_ENV = "BRAINEVENT_FULL_TRACEBACK"
_P = ParamSpec("_P")
_R = TypeVar("_R")


def trim_internal_frames(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """``fn`` re-raising brainevent's own errors with a traceback that starts at ``fn``."""

    @functools.wraps(fn)
    def public(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return fn(*args, **kwargs)
        except BrainEventError as exc:
            if os.environ.get(FULL_TRACEBACK_ENV, "").strip() not in ("", "0"):
                raise
            raise exc.with_traceback(None)  # noqa: B904 - the same error, its internal frames dropped

    return public
