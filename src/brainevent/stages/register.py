"""The artifact (a published cache entry) -> registration: dlopen the library and register
each function with JAX."""

from __future__ import annotations

import ctypes
import logging
from typing import TYPE_CHECKING

from ..errors import LoadError
from ..runtime.module import CompiledModule
from ..runtime.registry import register_targets

if TYPE_CHECKING:
    from ..cache.store import CacheEntry
    from .request import LoadRequest

log = logging.getLogger("brainevent")


def register(artifact: CacheEntry, request: LoadRequest) -> CompiledModule:
    """The module, its targets registered unless ``auto_register=False`` or this process's
    JAX cannot run the platform (then built, not registered, with a logged reason)."""
    options, platform = request.options, request.platform
    functions = artifact.functions()
    path = artifact.library
    prefix = options.target_prefix or options.name
    targets = {name: f"{prefix}.{name}" for name in functions}
    registered = False
    reason: str | None = None  # why not registered: a call then says so (runtime/module.py)
    if options.auto_register:
        reason = platform.can_register()
        if reason is None:
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
            register_targets(
                targets,
                library,
                module=options.name,
                platform=platform.jax_platform,
                artifact_key=artifact.manifest.artifact_sha256,  # a rebuild under one key is new code
                command_buffer=options.allow_cuda_graph,
                graph_capture=platform.graph_capture,
                replace=options.replace,
            )
            registered = True
        else:
            log.warning("module %s was built but not registered: %s", options.name, reason)
    return CompiledModule(
        name=options.name,
        path=path,
        platform=platform.name,
        functions=functions,
        targets=targets,
        registered=registered,
        built_now=artifact.built_now,
        cache_dir=artifact.directory,
        unregistered_reason=reason,
    )


def _preload_libraries(names: tuple[str, ...]) -> None:
    """The NVIDIA libraries the module links, loaded first from where the build found them, so
    its DT_NEEDED entries resolve to those copies whatever LD_LIBRARY_PATH says."""
    if names:
        from ..toolchain.nvidia_libs import preload

        preload(names)
