"""The build side of the cache store: a build slot (the entry's lock and a staging
directory) and publishing a finished build into place.

Only a build imports this module, so a cache hit reads none of it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from .. import config
from ..errors import CacheError
from ..fileio import atomic_write, read_blocks
from ..trust import harden_tree, private_file
from . import records
from .store import CacheEntry

if TYPE_CHECKING:
    from .key import CacheKey
    from .manifest import Manifest
    from .store import EntryStore

log = logging.getLogger("brainevent.cache")


class BuildSlot(NamedTuple):
    """A build of ``key`` in progress: its staging directory, or the entry that another
    process published while this one waited (then ``staging`` is None)."""

    key: CacheKey
    staging: Path | None
    existing: CacheEntry | None
    replace: bool  # force_rebuild: the published entry gives way to this build


def _cannot_build_error(directory: Path, why: str | None) -> CacheError:
    return CacheError(
        f"cannot build into the cache directory {directory}: {why}. Modules already cached there "
        "still load, but this one is not cached yet. Point BRAINEVENT_CACHE_DIR (or build_directory=) "
        "at a writable directory, or build it once where this cache is writable (`brainevent build`).",
        path=str(directory),
    )


@contextlib.contextmanager
def build_slot(store: EntryStore, key: CacheKey, *, force: bool = False) -> Iterator[BuildSlot]:
    """Holds the entry's build lock and a fresh staging directory for a build of ``key``.

    If another process published the entry while this one waited for the lock (and
    ``force`` is False), the slot carries that entry instead and no staging directory:
    build nothing. The staging directory is removed on leaving, published or not.
    """
    store.prepare(create=True)
    directory = store.module_dir
    # Before the lock file, so that a read-only cache (hits need no writes) gets a CacheError.
    if not os.access(directory, os.W_OK | os.X_OK, effective_ids=os.access in os.supports_effective_ids):
        raise _cannot_build_error(directory, "no write permission or a read-only filesystem")
    with _locked(store, key):
        if not force:
            entry, _ = store.lookup(key, again=True)  # another process may have published meanwhile
            if entry is not None:
                yield BuildSlot(key, None, entry, replace=False)
                return
        _remove_abandoned_staging(store, key)
        try:
            staging = Path(tempfile.mkdtemp(prefix=f".staging-{key.short}-{os.getpid()}-", dir=directory))
        except OSError as exc:
            raise _cannot_build_error(directory, exc.strerror) from exc
        try:
            yield BuildSlot(key, staging, None, replace=force)
        finally:
            shutil.rmtree(staging, ignore_errors=True)


@contextlib.contextmanager
def disk_full_guard(store: EntryStore, module: str) -> Iterator[None]:
    """Turns a full disk (or quota) inside a build slot and what is written into it into a typed
    CacheError; the slot has removed its staging directory by then."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        where = exc.filename or store.module_dir
        raise CacheError(
            f"the disk holding the cache is full ({exc.strerror}) at {where} while building module "
            f"{module!r}; nothing was published and the partial build was removed. Free space there "
            "(`brainevent cache prune --max-size 1G`), or point BRAINEVENT_CACHE_DIR (or build_directory=) "
            "at a directory on another disk.",
            path=str(where),
            module=module,
            disk_full=True,
        ) from exc


def publish(store: EntryStore, slot: BuildSlot, manifest: Manifest) -> CacheEntry:
    """Writes ``manifest`` into the slot's staging directory and moves it into place."""
    if slot.staging is None:
        raise ValueError("this build slot holds an entry another process published; nothing to publish")
    staging, key = slot.staging, slot.key
    manifest = manifest.stamped(staging)  # rename and chmod keep size and mtime
    manifest.dump(staging)
    harden_tree(staging, executable=manifest.artifact)  # whatever the umask
    _publish(store, staging, store.entry_dir(key), key, replace=slot.replace)
    # What was just built is what this process asked for, even if a file it read changed
    # meanwhile (then the entry records that, and the next load rebuilds).
    entry, _ = store.lookup(key, check_dependencies=False)
    if entry is None:
        raise CacheError(
            f"the entry just published at {store.entry_dir(key)} does not verify; the cache "
            "directory may be on a failing or full disk. Clear it with `brainevent cache clear`.",
            path=str(store.entry_dir(key)),
        )
    return CacheEntry(entry.directory, entry.manifest, built_now=True)


def _publish(store: EntryStore, staging: Path, final: Path, key: CacheKey, *, replace: bool) -> None:
    """Move a finished build into place; an intact entry already there always wins. Safe without
    the lock (node-local locks on a network filesystem): builds of one key are equivalent."""
    with contextlib.suppress(OSError):  # when the final directory exists
        os.rename(staging, final)
        return
    if not replace and store.lookup(key, again=True)[0] is not None:
        log.debug("%s was published by another builder; keeping it", final)
        return
    # Damaged, incomplete or being force-rebuilt: move it aside, then publish ours.
    trash = Path(tempfile.mkdtemp(prefix=".trash-", dir=store.module_dir))
    with contextlib.suppress(FileNotFoundError):
        os.rename(final, trash / "old")
    try:
        os.rename(staging, final)
    except OSError as exc:
        log.debug("publish of %s lost a race: %s", final, exc)
    shutil.rmtree(trash, ignore_errors=True)


def _remove_abandoned_staging(store: EntryStore, key: CacheKey) -> None:
    prefix = f".staging-{key.short}-"
    with os.scandir(store.module_dir) as entries:  # not glob: compiling its pattern costs ms a build
        children = [Path(e.path) for e in entries if e.name.startswith(prefix)]
    for child in children:
        pid_text = child.name[len(prefix) :].split("-", 1)[0]
        if not pid_text.isdigit():
            continue
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:  # its builder is gone
            shutil.rmtree(child, ignore_errors=True)
        except PermissionError:  # another user's process, alive
            pass


@contextlib.contextmanager
def _locked(store: EntryStore, key: CacheKey) -> Iterator[None]:
    if not config.USE_LOCKS.get():
        yield  # correctness rests on content addressing and atomic publish alone
        return
    import filelock  # only builds lock

    lock_path, owner_path = store.lock_path(key), store.module_dir / f"{key.short}.owner"
    lock = filelock.FileLock(str(lock_path), mode=0o600)
    deadline = time.monotonic() + config.LOCK_TIMEOUT.get()
    poll = 0.05
    while True:
        try:
            lock.acquire(timeout=poll)
            break
        except filelock.Timeout:
            holder = _read_owner(owner_path)
            if poll in (0.05, 2.0):  # the first wait, then every 2 s
                log.info("waiting for the build lock of %s (%s), held by %s", store.name, lock_path, holder)
            if time.monotonic() >= deadline:
                raise CacheError(
                    f"gave up after {config.LOCK_TIMEOUT.get():.0f} s waiting for the build lock "
                    f"{lock_path}, held by {holder}. If that build is stuck, stop it; "
                    "raise BRAINEVENT_LOCK_TIMEOUT to wait longer.",
                    lock_path=str(lock_path),
                    holder=holder,
                ) from None
            poll = min(poll * 2, 2.0)
        except OSError as exc:  # not a Timeout: e.g. a symbolic link planted where the lock goes
            raise CacheError(
                f"cannot take the build lock {lock_path}: {exc.strerror or exc}. Remove that file "
                f"(`brainevent cache clear {store.name}`) or point BRAINEVENT_CACHE_DIR at "
                "a directory only you can write.",
                lock_path=str(lock_path),
            ) from None
    try:
        with contextlib.suppress(OSError):
            record = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
            atomic_write(owner_path, json.dumps(record).encode())
        yield
    finally:
        with contextlib.suppress(OSError):
            owner_path.unlink()
        lock.release()


def _read_owner(path: Path) -> str:
    try:
        if not private_file(path):  # never read a planted link (to a FIFO, say)
            return "another process"
        data = records.owner_record(b"".join(read_blocks(path)), str(path))
        since = time.strftime("%H:%M:%S", time.localtime(float(data["since"])))
        return f"pid {data['pid']} on {data['host']} since {since}"
    except (OSError, ValueError, OverflowError, CacheError):  # a damaged record names nobody
        return "another process"
