"""The orchestrator: request -> key -> (cache hit | build plan -> artifact) -> registration.

``build(request)`` makes sure the artifact exists (the ahead-of-time CLI stops there);
``load(request)`` builds and registers. A cache hit computes the key from the raw inputs
(no spec parsing, no subprocess), verifies the entry's manifest and reads the specs back
from it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..cache import cache_root
from ..cache.store import CacheEntry, EntryStore
from .key import derive_key
from .recall import register, remember, stamps_before

if TYPE_CHECKING:
    from ..runtime.module import CompiledModule
    from .key import ModuleKey
    from .recall import Call
    from .request import LoadRequest

log = logging.getLogger("brainevent")


def load(request: LoadRequest, call: Call | None = None) -> CompiledModule:
    """The module of ``request``, from the cache or built now, registered with JAX; ``call``:
    the loader call to remember, so that a later process recalls it (recall.py)."""
    if not request.options.verbose:  # the common case imports no logging helper
        stamped = stamps_before(call, request)
        entry = _artifact(request)
        remember(call, stamped, entry)
        return register(entry, request)
    from ..logs import to_stderr

    with to_stderr(log, logging.DEBUG):
        return register(_artifact(request), request)


def build(request: LoadRequest) -> CacheEntry:
    """The artifact of ``request``, from the cache or built now; nothing is loaded."""
    from ..logs import to_stderr

    with to_stderr(log, logging.DEBUG, request.options.verbose):
        return _artifact(request)


def _artifact(request: LoadRequest) -> CacheEntry:
    options = request.options
    key = derive_key(request)
    # A module prebuilt into the user's own package comes first (inline sources have none:
    # their loads skip importing the bundle reader).
    if not options.force_rebuild and any(u.directory is not None for u in request.units):
        from .. import bundle

        bundled = bundle.lookup(
            request.units,
            key.keyed_without_toolchain,
            request.platform.name,
            request.platform.portable_inputs(options),
        )
        if bundled is not None:
            return bundled
    store = EntryStore(cache_root(options.build_directory), options.name)
    if key.exact is None:
        return _prebuilt(store, key, request)
    if not options.force_rebuild:
        entry = store.hit(key.exact)
        if entry is not None:
            log.debug("cache hit for %s at %s", options.name, entry.directory)
            return entry
    # In a jax.distributed job, one process builds for all (distributed/exchange.py).
    from .. import distributed

    built = distributed.get_or_build(
        store, key.exact, lambda: build_missing(request, key, store), force=options.force_rebuild
    )
    return built


def build_missing(request: LoadRequest, key: ModuleKey, store: EntryStore) -> CacheEntry:
    """The local cache has no usable entry for ``key`` (or force_rebuild): build it under
    the entry's lock, in a staging directory, and publish it."""
    from ..cache.publish import build_slot, disk_full_guard, publish
    from .execute import run_plan
    from .plan import plan_build

    assert key.exact is not None
    force = request.options.force_rebuild
    with disk_full_guard(store, request.options.name), build_slot(store, key.exact, force=force) as slot:
        if slot.staging is None:  # another process published it while this one waited
            assert slot.existing is not None
            return slot.existing
        plan = plan_build(slot.staging, request)
        entry = publish(store, slot, run_plan(plan, slot.staging, request, key, store))
    store.write_alias(key.portable, key.exact)
    return entry


def _prebuilt(store: EntryStore, key: ModuleKey, request: LoadRequest) -> CacheEntry:
    """No toolchain here: the ahead-of-time build of the same sources and options, if any."""
    assert key.toolchain_error is not None
    name = request.options.name
    prebuilt, why_not = store.lookup_alias(key.portable)
    if prebuilt is None:
        found = (
            f"The ahead-of-time build of module {name!r} under {store.module_dir} cannot "
            f"be used: {why_not}. Rebuild it where a compiler is installed (`brainevent build`)."
            if why_not
            else f"No ahead-of-time build of module {name!r} with these sources and "
            f"options was found under {store.module_dir} either (see `brainevent build`)."
        )
        exc = key.toolchain_error
        raise type(exc)(f"{exc.message}\n{found}", **exc.data) from None  # keeps NvccNotFoundError etc.
    log.debug("no toolchain; loading the ahead-of-time build at %s", prebuilt.directory)
    return prebuilt
