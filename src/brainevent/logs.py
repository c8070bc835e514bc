"""Showing a logger's records on stderr for the span of one call (``verbose=True``)."""

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
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[brainevent] %(message)s"))
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
