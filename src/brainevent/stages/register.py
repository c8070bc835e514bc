"""The artifact (a published cache entry) -> registration: dlopen the library and register
each function with JAX."""

from __future__ import annotations

import ctypes
import logging
from typing import TYPE_CHECKING

from ..errors import LoadError
from ..platforms.devices import BUILD_PLATFORMS
from ..runtime.module import CompiledModule
from ..runtime.registry import register_targets

if TYPE_CHECKING:  # a Protocol class costs a first hit more than a plain one: type checkers only
    from typing import Protocol

    from ..cache.store import CacheEntry
    from .request import LoadRequest

    class Registration(Protocol):
        """What registering a module reads of its load's options (``LoadOptions`` has it all)."""

        name: str
        target_prefix: str | None
        auto_register: bool
        allow_cuda_graph: bool
        replace: bool
        extra_libraries: tuple[str, ...]


log = logging.getLogger("brainevent")


def register(artifact: CacheEntry, request: LoadRequest) -> CompiledModule:
    """The module, its targets registered unless ``auto_register=False`` or this process's
    JAX cannot run the platform (then built, not registered, with a logged reason)."""
    options, platform = request.options, request.platform
    reason = platform.can_register() if options.auto_register else None
    return register_entry(artifact, options, platform.name, reason)


def register_entry(
    artifact: CacheEntry, options: Registration, platform: str, reason: str | None
) -> CompiledModule:
    """``artifact`` as a module of ``platform`` (a build platform), registered when
    ``options.auto_register`` and nothing (``reason``) prevents it."""
    functions = artifact.functions()
    path = artifact.library
    prefix = options.target_prefix or options.name
    targets = {name: f"{prefix}.{name}" for name in functions}
    registered = False
    if options.auto_register and reason is None:
        _preload_libraries(options.extra_libraries)
        if artifact.manifest.inputs.get("openmp"):
            from ..runtime.openmp import prepare_openmp_runtime

            prepare_openmp_runtime()  # before dlopen: libgomp reads its environment once
        try:
            library = ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL)
        except OSError as exc:
            raise LoadError(
                f"cannot load {path}: {exc}. Rebuild it with force_rebuild=True; if "
                "that fails too, the toolchain produced a library this process cannot load.",
                path=str(path),
            ) from exc
        row = BUILD_PLATFORMS[platform]
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
        path=path,
        platform=platform,
        functions=functions,
        targets=targets,
        registered=registered,
        built_now=artifact.built_now,
        cache_dir=artifact.directory,
        unregistered_reason=reason,
    )


def _preload_libraries(names: tuple[str, ...]) -> None:
    """The NVIDIA libraries the module links, loaded first so its DT_NEEDED entries resolve to them."""
    if names:
        from ..toolchain.nvidia_libs import preload

        preload(names)
