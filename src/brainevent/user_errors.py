"""Tracebacks of user errors end at the public call.

A ``SpecError`` or ``CompileError`` is about the caller's source, flags or arguments; the
fifteen frames of our build pipeline under the call say nothing to act on, so the public
loaders re-raise such errors with the traceback cut at their own frame.
``BRAINEVENT_FULL_TRACEBACK=1`` keeps every frame (for reporting a bug in brainevent).
Errors that are not ``BrainEventError`` (a bug) always keep their full traceback.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from .errors import BrainEventError

__all__ = ["FULL_TRACEBACK_ENV", "trim_internal_frames"]

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
