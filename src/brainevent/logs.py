"""Showing brainevent's log records on stderr: for one call (``verbose=True``) or for the
command line's process. Only brainevent's loggers: other libraries' records keep their own
handling (JAX's, for one, must not read as brainevent's)."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def to_stderr(logger: logging.Logger, level: int, enabled: bool = True) -> Iterator[None]:
    """While active (and ``enabled``), ``logger``'s records from ``level`` up go to stderr
    prefixed ``[brainevent]``, whatever logging the application set up."""
    if not enabled:
        yield
        return
    previous = logger.level
    handler = show_on_stderr(logger, level)
    try:
        yield
    finally:
        if handler is not None:
            logger.removeHandler(handler)
        logger.setLevel(previous)


def show_on_stderr(logger: logging.Logger, level: int) -> logging.Handler | None:
    """From now on, ``logger``'s records from ``level`` up go to stderr prefixed ``[brainevent]``.
    Returns the handler added, or None where ``logger`` or a parent already has one (the command
    line's on ``brainevent``): a record is shown once."""
    logger.setLevel(level)
    node: logging.Logger | None = logger
    while node is not None:
        if any(isinstance(h, _StderrHandler) for h in node.handlers):
            return None
        node = node.parent if node.propagate else None
    handler = _StderrHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[brainevent] %(message)s"))
    logger.addHandler(handler)
    return handler


class _StderrHandler(logging.StreamHandler):
    """Ours, told apart from the application's handlers."""
