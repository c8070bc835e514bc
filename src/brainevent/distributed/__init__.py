"""Compile once per ``jax.distributed`` job.

When JAX's distributed runtime is initialised, the processes that miss a module in their
own cache elect one builder (the first to claim the module's key in the coordination
service); it builds into its cache as usual and publishes the entry through the service's
key-value store, and the others verify it and publish it into their own caches. No shared
filesystem and no other service is needed.

The one entry point, :func:`get_or_build`, wraps the load's local build after a miss in
this process's own cache (``stages/load.py``).
"""

from __future__ import annotations

from .exchange import CHUNK_BYTES, get_or_build

__all__ = ["CHUNK_BYTES", "get_or_build"]
