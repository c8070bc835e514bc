"""Inspecting and trimming the cache: list, info, clear, prune.

Removal is safe while other processes use the cache (a locked entry is skipped; entries are
renamed away before deletion), and only what the cache made is touched: a directory named by a
key holding a manifest.json, or an object named by its key (docs/caching.md).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..config import finite_number
from ..errors import CacheError
from ..trust import check_root, private_dir
from . import LAYOUT_VERSION, MANIFEST_NAME, inside_name
from .manifest import Manifest


@dataclass(frozen=True)
class EntryInfo:
    module: str
    directory: Path
    manifest: Manifest | None  # None when the entry is damaged
    size: int  # bytes on disk
    last_used: float  # modification time of the entry's directory (touched on every hit)


def _tree_size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


_ENTRY = re.compile(r"[0-9a-f]{32}")  # CacheKey.short
_OBJECT = re.compile(r"[0-9a-f]{40}\.(o|deps\.json)")  # ObjectCache.key, and its record


def _ours(directory: Path) -> bool:
    """A directory of the cache's (checked, never tightened: admin changes no mode); False when absent."""
    return private_dir(directory, create=False, tighten=False)


def _is_entry(path: Path) -> bool:
    return bool(_ENTRY.fullmatch(path.name)) and os.path.isfile(path / MANIFEST_NAME) and _ours(path)


def iter_entries(root: Path, module: str | None = None) -> Iterator[EntryInfo]:
    """Every entry under ``root``; a root or directory another user could write is refused."""
    base = root / LAYOUT_VERSION
    if module is not None and not inside_name(module):
        return  # a path, not a module's name: nothing of the cache
    if not (check_root(root, create=False) and _ours(base)):
        return
    modules = [base / module] if module else sorted(p for p in base.iterdir() if p.is_dir())
    for module_dir in modules:
        if not _ours(module_dir):
            continue
        for entry in sorted(module_dir.iterdir()):
            if not _is_entry(entry):
                continue
            try:
                last_used = entry.stat().st_mtime
            except OSError:
                last_used = 0.0
            yield EntryInfo(module_dir.name, entry, Manifest.load(entry), _tree_size(entry), last_used)


def _objects(root: Path, module: str | None = None) -> Iterator[Path]:
    """The cached objects and their records (of one module), by name: nothing else is theirs."""
    base = root / LAYOUT_VERSION
    for directory in [base / module / "objects"] if module else base.glob("*/objects"):
        if directory.is_dir() and not directory.is_symlink():
            yield from (p for p in directory.iterdir() if _OBJECT.fullmatch(p.name))


def object_cache_size(root: Path) -> int:
    return sum(os.lstat(p).st_size for p in _objects(root))


def _remove_objects(root: Path, module: str | None = None) -> None:
    for path in list(_objects(root, module)):
        with contextlib.suppress(OSError):
            path.unlink()


_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)


def read_only_error(directory: Path, exc: OSError) -> CacheError:
    return CacheError(
        f"cannot remove cache entries under {directory}: {exc.strerror} (the cache is read-only here). "
        "Remount it writable or run as a user who can write it; a read-only cache still serves hits, "
        "and BRAINEVENT_CACHE_DIR can point at a writable cache instead.",
        path=str(directory),
    )


def _writable(root: Path) -> None:
    """Refuses, before anything is attempted, to clear or prune a cache that cannot change."""
    layout = root / LAYOUT_VERSION
    if not layout.is_dir():
        return  # nothing to remove
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".write-test-", dir=layout))
    except OSError as exc:
        if exc.errno in _READ_ONLY:
            raise read_only_error(layout, exc) from None
        raise


def remove_entry(entry: EntryInfo) -> bool:
    """Removes one entry unless a build holds its lock; True if removed."""
    import filelock

    path = entry.directory.parent / f"{entry.directory.name}.lock"
    lock = filelock.FileLock(str(path), mode=0o600)
    try:
        held = lock.acquire(timeout=0)
    except filelock.Timeout:
        return False
    except OSError as exc:  # not a Timeout: e.g. a symbolic link planted where the lock goes
        if exc.errno in _READ_ONLY:  # the file is not the problem: nothing can be written there
            raise read_only_error(entry.directory.parent, exc) from None
        raise CacheError(
            f"cannot take the lock {path}: {exc.strerror or exc}. Remove that file by hand.", path=str(path)
        ) from None
    with held:  # released on leaving
        trash = Path(tempfile.mkdtemp(prefix=".trash-", dir=entry.directory.parent))
        with contextlib.suppress(FileNotFoundError):
            os.rename(entry.directory, trash / "entry")
        shutil.rmtree(trash, ignore_errors=True)
    return True


def _remove_all(entries: list[EntryInfo]) -> tuple[set[Path], int]:
    """Removes each entry unless a build holds it: (the removed ones' directories, how many were busy)."""
    removed = {e.directory for e in entries if remove_entry(e)}
    return removed, len(entries) - len(removed)


def clear(root: Path, module: str | None = None) -> tuple[int, int]:
    """Removes every entry (of one module); returns (removed, skipped because busy)."""
    entries = list(iter_entries(root, module))
    if entries:
        _writable(root)
    removed, skipped = _remove_all(entries)
    _remove_objects(root, module)
    return len(removed), skipped


def superseded(entries: Iterable[EntryInfo], keep: int) -> list[EntryInfo]:
    """Entries beyond the ``keep`` (at least 1) most recently used versions of each build of a
    module; a damaged entry (no readable manifest) never loads as it is, so it is always included.
    A manifest's ``variant`` tells its build from the others of its name; entries that differ in
    anything else (the sources, the compiler, brainevent's version) are versions of one build."""
    if keep < 1:
        raise ValueError(f"keep must be at least 1, got {keep}: `cache clear` removes every entry")
    versions: dict[tuple[str, str, str, str], list[EntryInfo]] = {}
    old = []
    for entry in entries:
        if entry.manifest is None:
            old.append(entry)
            continue
        m = entry.manifest
        build = (entry.module, m.platform, m.name, json.dumps(m.variant, sort_keys=True, default=str))
        versions.setdefault(build, []).append(entry)
    for group in versions.values():
        old += sorted(group, key=lambda e: e.last_used, reverse=True)[keep:]
    return old


def prune(
    root: Path,
    *,
    max_size: int | None = None,
    older_than: float | None = None,
    keep_newest: int | None = None,
) -> tuple[int, int, int]:
    """Removes entries unused for ``older_than`` seconds, then all but the ``keep_newest`` most
    recently used versions of each build of a module (see ``superseded``), then least recently
    used ones until the cache fits ``max_size`` bytes. Returns (removed, skipped because busy,
    bytes left)."""
    _writable(root)
    entries = sorted(iter_entries(root), key=lambda e: e.last_used)
    old = {e.directory for e in superseded(entries, keep_newest)} if keep_newest is not None else set()
    if older_than is not None:
        old |= {e.directory for e in entries if time.time() - e.last_used > older_than}
    gone, skipped = _remove_all([e for e in entries if e.directory in old])
    kept = [e for e in entries if e.directory not in gone]
    total = sum(e.size for e in kept) + object_cache_size(root)
    if max_size is not None and total > max_size:
        _remove_objects(root)  # objects only speed up rebuilds; they go first
        total = sum(e.size for e in kept)
        for entry in kept:  # least recently used first
            if total <= max_size:
                break
            if remove_entry(entry):
                gone.add(entry.directory)
                total -= entry.size
            else:
                skipped += 1
    return len(gone), skipped, total


_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_size(text: str) -> int:
    raw = text.strip().lower().removesuffix("b").removesuffix("i")
    return int(_quantity(text, raw, "size", _SIZE_UNITS, "", "500M, 2G or 1048576"))


def parse_age(text: str) -> float:
    return _quantity(text, text.strip().lower(), "age", _AGE_UNITS, "s", "30m, 12h or 7d")


def _quantity(text: str, raw: str, what: str, units: dict[str, int], default: str, examples: str) -> float:
    """``raw`` (``text`` normalised) as a non-negative number times its one-letter unit."""
    number, unit = (raw[:-1], raw[-1]) if raw and raw[-1] in units else (raw, default)
    try:
        value = finite_number(number) * units[unit]  # nan, inf and 1e400 too
    except ValueError:
        raise ValueError(f"{what} {text!r} is not valid: use e.g. {examples}") from None
    if not 0 <= value < 2**63:
        raise ValueError(f"{what} {text!r} must be a number from 0 up, below 2**63")
    return value
