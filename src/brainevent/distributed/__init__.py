"""Compile once per ``jax.distributed`` job: the processes that miss elect one builder, which shares
the entry through the coordination service, no shared filesystem needed (exchange.py has the protocol).
:func:`get_or_build` wraps the load's local build (``stages/load.py``)."""

from __future__ import annotations

from .exchange import CHUNK_BYTES, get_or_build

__all__ = ["CHUNK_BYTES", "get_or_build"]
