"""The load pipeline as explicit stages, each passing a small frozen value to the next:

    LoadRequest (request.py)  ->  ModuleKey (key.py)  ->  cache hit, or on a miss
    BuildPlan (plan.py)  ->  build (execute.py)  ->  the artifact, a published
    CacheEntry (cache/store.py)  ->  CompiledModule (register.py)

``load.py`` runs them: ``build(request)`` stops at the artifact, ``load(request)``
registers it. What differs between platforms is asked of the request's platform object
(``brainevent.platforms``); the cache store only looks up, lends a build slot and publishes.
"""

from ..load_options import LoadOptions, SourceUnit, make_options
from .key import ModuleKey, derive_key
from .load import build, build_missing, load
from .request import LoadRequest

__all__ = [
    "LoadOptions",
    "LoadRequest",
    "ModuleKey",
    "SourceUnit",
    "build",
    "build_missing",
    "derive_key",
    "load",
    "make_options",
]
