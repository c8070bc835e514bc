"""Compile once per ``jax.distributed`` job.

The processes that miss a module in their own cache elect one builder (the first to claim
the module's key in the coordination service); it publishes the entry through the service's
key-value store, and the others verify it and publish it into their own caches. No shared
filesystem is needed. :func:`get_or_build` wraps the load's local build (``stages/load.py``).
"""

from __future__ import annotations

from .exchange import CHUNK_BYTES, get_or_build

__all__ = ["CHUNK_BYTES", "get_or_build"]
