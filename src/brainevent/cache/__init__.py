"""Content-addressed store of compiled modules: key schema, locks, atomic publish, manifests.

The names below load on first use, so that importing one submodule does not import the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    from ..lazy_exports import lazy_getattr

    __getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


__all__ = sorted(_EXPORTS)
