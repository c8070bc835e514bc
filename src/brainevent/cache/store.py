"""The published entries of one module: lookup, a build slot (lock + staging), publish.

A cache hit needs only the lookup, here; the build side (``build_slot``, ``publish``) is in
publish.py, which imports this module and is imported only when a build starts. An entry is
built in a staging directory and published with one ``rename``, so readers never take the
lock. The layout under the cache root: docs/caching.md, "Layout".
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from ..fileio import atomic_write, read_blocks
from ..trust import check_root, entry_fix, private_dir, private_file
from . import LAYOUT_VERSION, MANIFEST_NAME, inside_name, record_use, records
from .key import CacheKey
from .manifest import Manifest

log = logging.getLogger("brainevent.cache")


class CacheEntry:
    """A published entry: the artifact the load stages pass on (a plain class: every hit makes one)."""

    __slots__ = ("built_now", "directory", "manifest")

    def __init__(self, directory: Path, manifest: Manifest, built_now: bool) -> None:
        self.directory = directory
        self.manifest = manifest
        self.built_now = built_now  # False on a cache hit

    def __repr__(self) -> str:
        return f"CacheEntry({self.directory!r}, built_now={self.built_now})"

    @property
    def library(self) -> Path:
        """The shared object."""
        return self.directory / self.manifest.artifact


class EntryStore:
    def __init__(self, root: Path, name: str) -> None:
        self.root = root
        self.name = name
        self.layout_dir = root / LAYOUT_VERSION
        self.module_dir = self.layout_dir / name

    def entry_dir(self, key: CacheKey) -> Path:
        return self.module_dir / key.short

    def prepare(self, *, create: bool) -> bool:
        """Checks (creating if asked) the directories from the root down to the module's;
        False when they do not exist yet. Refuses with a CacheError what others could write."""
        dirs = (self.layout_dir, self.module_dir)
        return check_root(self.root, create=create) and all(private_dir(d, create=create) for d in dirs)

    def lock_path(self, key: CacheKey) -> Path:
        return self.module_dir / f"{key.short}.lock"

    def failed_log_path(self, key: CacheKey) -> Path:
        return self.module_dir / f"{key.short}.failed.log"

    def lookup(
        self, key: CacheKey, *, check_dependencies: bool = True, again: bool = False
    ) -> tuple[CacheEntry | None, str | None]:
        """(the published entry for ``key``, None) if it is intact and up to date, else (None, why
        not: None when there is no entry); never locks or builds. ``again``: a build's re-check,
        after a lookup that warned of damage already."""
        directory = self.entry_dir(key)
        fix = entry_fix(self.name)
        if not (self.prepare(create=False) and private_dir(directory, create=False, fix=fix)):
            return None, None
        # Entries are published whole (one rename): one that lacks a part was damaged since.
        manifest = Manifest.load(directory) if private_file(directory / MANIFEST_NAME, fix) else None
        if manifest is None:
            problem: str | None = "its manifest is missing, truncated, damaged or of another version"
        elif not inside_name(manifest.artifact) or not private_file(directory / manifest.artifact, fix):
            problem = "its library is missing"
        else:
            problem = manifest.verify(directory, key.digest)
        if problem is not None:
            log.log(
                logging.DEBUG if again else logging.WARNING,
                "cache entry %s is damaged (%s); it will be rebuilt",
                directory,
                problem,
            )
            return None, f"the entry is damaged ({problem})"
        assert manifest is not None
        if check_dependencies:
            stale = manifest.stale_dependency()
            if stale is not None:
                log.info("cache entry %s is out of date: %s", directory, stale)
                return None, f"it was built from other contents: {stale}"
        return CacheEntry(directory, manifest, built_now=False), None

    def alias_path(self, portable: CacheKey) -> Path:
        return self.module_dir / f"{portable.short}.alias"

    def write_alias(self, portable: CacheKey, key: CacheKey) -> None:
        """Records that ``portable`` (a key without toolchain identity) was last built as ``key``."""
        with contextlib.suppress(OSError):
            atomic_write(self.alias_path(portable), key.digest.encode())

    def lookup_alias(self, portable: CacheKey) -> tuple[CacheEntry | None, str | None]:
        """The ahead-of-time entry for ``portable``, or (None, why it cannot be used)."""
        path = self.alias_path(portable)
        try:
            if not (self.prepare(create=False) and private_file(path)):
                return None, None
            digest = records.alias(b"".join(read_blocks(path, limit=1024)), str(path))
        except (OSError, ValueError):  # missing, or not a key (RecordError): no alias
            return None, None
        return self.lookup(CacheKey(digest))

    def hit(self, key: CacheKey) -> CacheEntry | None:
        """:meth:`lookup`, recording the use (for `brainevent cache prune`) when it finds the entry."""
        entry, _ = self.lookup(key)
        if entry is not None:
            record_use(entry.directory)
        return entry
