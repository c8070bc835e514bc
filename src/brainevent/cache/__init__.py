"""Content-addressed store of compiled modules: key schema, locks, atomic publish, manifests."""

from .key import CacheKey, KeyBuilder
from .manifest import Manifest
from .store import CacheEntry, EntryStore, cache_root

__all__ = ["CacheEntry", "CacheKey", "EntryStore", "KeyBuilder", "Manifest", "cache_root"]
