"""The load pipeline as explicit stages, each passing a small frozen value to the next:

    LoadRequest (request.py)  ->  ModuleKey (key.py)  ->  cache hit, or on a miss
    BuildPlan (plan.py)  ->  build (execute.py)  ->  the artifact, a published
    CacheEntry (cache/store.py)  ->  CompiledModule (recall.py)

``load.py`` runs them: ``build(request)`` stops at the artifact, ``load(request)``
registers it. What differs between platforms is asked of the request's platform object
(``brainevent.platforms``); the cache store only looks up, lends a build slot and publishes.
A load that an earlier process made with the same arguments is recalled without the first
stages (recall.py). The names below load on first use: a recalled load imports none of them.
(``load`` is not among them: the submodule of that name would shadow it; import it from
``stages.load``.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .key import ModuleKey as ModuleKey
    from .key import derive_key as derive_key
    from .load import build as build
    from .load import build_missing as build_missing
    from .request import LoadRequest as LoadRequest

_EXPORTS = {
    "ModuleKey": "key",
    "derive_key": "key",
    "build": "load",
    "build_missing": "load",
    "LoadRequest": "request",
}

if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        from .. import _load_export

        return _load_export(__name__, _EXPORTS, globals(), name)


__all__ = sorted(_EXPORTS)
