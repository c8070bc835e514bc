"""The orchestrator: request -> key -> (cache hit | build plan -> artifact) -> registration.

``build(request)`` makes sure the artifact exists (the ahead-of-time CLI stops there);
``load(request)`` builds and registers. A cache hit computes the key from the raw inputs
(no spec parsing, no subprocess), verifies the entry's manifest and registers the function
names its rows hold; the specs are made from the rows on first use (runtime/module.py).
"""

from __future__ import annotations

import ctypes
import logging
from typing import TYPE_CHECKING

from ..cache import cache_root
from ..cache.store import CacheEntry, EntryStore
from ..errors import LoadError
from ..platform_table import BUILD_PLATFORMS
from ..runtime.module import CompiledModule, SpecTable
from ..runtime.registry import register_targets
from .module_key import derive_key

if TYPE_CHECKING:
    from .module_key import ModuleKey
    from .request import LoadRequest

log = logging.getLogger("brainevent")


def load(request: LoadRequest) -> CompiledModule:
    """The module of ``request``, from the cache or built now, registered with JAX."""
    if not request.options.verbose:  # the common case imports no logging helper
        return register(_artifact(request), request)
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
        from ..cache.bundle import lookup

        bundled = lookup(
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

    return distributed.get_or_build(
        store, key.exact, lambda: build_missing(request, key, store), force=options.force_rebuild
    )


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


def register(artifact: CacheEntry, request: LoadRequest) -> CompiledModule:
    """The module, its targets registered unless ``auto_register=False`` or this process's
    JAX cannot run the platform (then built, not registered, with a logged reason)."""
    options, platform = request.options, request.platform
    reason = platform.can_register() if options.auto_register else None
    functions = SpecTable(artifact.manifest.functions)
    prefix = options.target_prefix or options.name
    targets = {name: f"{prefix}.{name}" for name in functions}
    registered = False
    if options.auto_register and reason is None:
        if options.extra_libraries:  # loaded first, so the module's DT_NEEDED entries resolve to them
            from ..toolchain.nvidia_libs import preload

            preload(options.extra_libraries)
        if artifact.manifest.inputs.get("openmp"):
            from ..runtime.openmp import prepare_openmp_runtime

            prepare_openmp_runtime()  # before dlopen: libgomp reads its environment once
        try:
            library = ctypes.CDLL(str(artifact.library), mode=ctypes.RTLD_LOCAL)
        except OSError as exc:
            raise LoadError(
                f"cannot load {artifact.library}: {exc}. Rebuild it with force_rebuild=True; if "
                "that fails too, the toolchain produced a library this process cannot load.",
                path=str(artifact.library),
            ) from exc
        row = BUILD_PLATFORMS[platform.name]
        register_targets(
            targets,
            library,
            module=options.name,
            platform=row.ffi_platform,
            artifact_key=artifact.manifest.artifact_sha256,  # a rebuild under one key is new code
            command_buffer=options.allow_cuda_graph,
            graph_capture=row.graph_capture,
            replace=options.replace,
        )
        registered = True
    elif options.auto_register:
        log.warning("module %s was built but not registered: %s", options.name, reason)
    return CompiledModule(
        name=options.name,
        path=artifact.library,
        platform=platform.name,
        functions=functions,
        targets=targets,
        registered=registered,
        built_now=artifact.built_now,
        cache_dir=artifact.directory,
        unregistered_reason=reason,
    )
