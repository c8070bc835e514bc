"""Content-addressed store of compiled modules: key schema, locks, atomic publish, manifests.

The names below load on first use, so that importing one submodule does not import the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .key import CacheKey as CacheKey
    from .key import KeyBuilder as KeyBuilder
    from .manifest import Manifest as Manifest
    from .store import CacheEntry as CacheEntry
    from .store import EntryStore as EntryStore
    from .store import cache_root as cache_root

_EXPORTS = {
    "CacheKey": "key",
    "KeyBuilder": "key",
    "Manifest": "manifest",
    "CacheEntry": "store",
    "EntryStore": "store",
    "cache_root": "store",
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
