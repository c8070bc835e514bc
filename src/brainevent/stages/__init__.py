"""The load pipeline as explicit stages, each passing a small frozen value to the next:

    LoadRequest (request.py)  ->  ModuleKey (key.py)  ->  cache hit, or on a miss
    BuildPlan (plan.py)  ->  build (execute.py)  ->  Artifact (artifact.py)  ->
    CompiledModule (register.py)

``load.py`` runs them: ``build(request)`` stops at the artifact, ``load(request)``
registers it. What differs between platforms is asked of the request's platform object
(``brainevent.platforms``); the cache store only looks up, lends a build slot and publishes.

The names below load on first use: a cache hit imports only the modules its path needs
(docs/architecture.md, "The cache-hit path").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .artifact import Artifact as Artifact
    from .key import ModuleKey as ModuleKey
    from .key import derive_key as derive_key
    from .load import build as build
    from .load import build_missing as build_missing
    from .load import load as load
    from .request import LoadOptions as LoadOptions
    from .request import LoadRequest as LoadRequest
    from .request import SourceUnit as SourceUnit
    from .request import make_options as make_options

_EXPORTS = {
    "Artifact": "artifact",
    "ModuleKey": "key",
    "derive_key": "key",
    "build": "load",
    "build_missing": "load",
    "load": "load",
    "LoadOptions": "request",
    "LoadRequest": "request",
    "SourceUnit": "request",
    "make_options": "request",
}

if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        if name in _EXPORTS:
            import importlib

            value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
            globals()[name] = value
            return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_EXPORTS)
