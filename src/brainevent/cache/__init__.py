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

if not TYPE_CHECKING:  # hidden from type checkers, so that a misspelt name is an error there

    def __getattr__(name: str) -> Any:
        from .. import _load_export

        return _load_export(__name__, _EXPORTS, globals(), name)


__all__ = sorted(_EXPORTS)
