"""The published entries of one module: lookup, a build slot (lock + staging), publish.

Layout under the cache root::

    v1/<module name>/<key>/            a published entry: artifact, manifest.json, build.log, sources
    v1/<module name>/<key>.lock        the per-entry build lock (filelock)
    v1/<module name>/<key>.owner       who holds that lock, for log lines
    v1/<module name>/.staging-<key>-<pid>-<random>/   a build in progress

An entry is built in a staging directory and published with one ``rename``;
readers never take the lock, so a hit costs a manifest read, a stat of the library and one
of each header the compiler read (cache/deps.py). A failed build publishes nothing; a
corrupt entry is rebuilt under the lock.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from .. import config
from ..errors import CacheError
from ..fileio import atomic_write
from .key import CacheKey
from .manifest import MANIFEST_NAME, Manifest
from .trust import check_root, entry_fix, harden_tree, private_dir, private_file, write_private

log = logging.getLogger("brainevent.cache")

LAYOUT_VERSION = "v1"


def cache_root(build_directory: str | os.PathLike[str] | None = None) -> Path:
    if build_directory is not None:
        return Path(build_directory).expanduser()
    return config.CACHE_DIR.get()


class CacheEntry:
    """A published entry. A plain class: every cache hit creates one, and creating a
    NamedTuple (or a dataclass) at import costs more than the hit's own work here."""

    __slots__ = ("built_now", "directory", "manifest")

    def __init__(self, directory: Path, manifest: Manifest, built_now: bool) -> None:
        self.directory = directory
        self.manifest = manifest
        self.built_now = built_now  # False on a cache hit

    def __repr__(self) -> str:
        return f"CacheEntry({self.directory!r}, built_now={self.built_now})"

    @property
    def artifact(self) -> Path:
        return self.directory / self.manifest.artifact


class BuildSlot:
    """A build of ``key`` in progress: its staging directory, or the entry that another
    process published while this one waited (then ``staging`` is None)."""

    __slots__ = ("existing", "key", "replace", "staging")

    def __init__(
        self, key: CacheKey, staging: Path | None, existing: CacheEntry | None, replace: bool
    ) -> None:
        self.key = key
        self.staging = staging
        self.existing = existing
        self.replace = replace  # force_rebuild: the published entry gives way to this build


def _require_writable(directory: Path) -> None:
    """CacheError unless this process may create files in ``directory`` (hits need no writes)."""
    if not os.access(directory, os.W_OK | os.X_OK, effective_ids=os.access in os.supports_effective_ids):
        raise _cannot_build_error(directory, "no write permission or a read-only filesystem")


def _cannot_build_error(directory: Path, why: str | None) -> CacheError:
    return CacheError(
        f"cannot build into the cache directory {directory}: {why}. Modules already cached there "
        "still load, but this one is not cached yet. Point BRAINEVENT_CACHE_DIR (or build_directory=) "
        "at a writable directory, or build it once where this cache is writable (`brainevent build`).",
        path=str(directory),
    )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class EntryStore:
    def __init__(self, root: Path, name: str) -> None:
        self.root = root
        self.name = name
        self.module_dir = root / LAYOUT_VERSION / name

    def entry_dir(self, key: CacheKey) -> Path:
        return self.module_dir / key.short

    def prepare(self, *, create: bool) -> bool:
        """Checks (creating if asked) the directories from the root down to the module's;
        False when they do not exist yet. Refuses with a CacheError what others could write."""
        if not check_root(self.root, create=create):
            return False
        return private_dir(self.root / LAYOUT_VERSION, create=create) and private_dir(
            self.module_dir, create=create
        )

    def lock_path(self, key: CacheKey) -> Path:
        return self.module_dir / f"{key.short}.lock"

    def failed_log_path(self, key: CacheKey) -> Path:
        return self.module_dir / f"{key.short}.failed.log"

    def lookup(self, key: CacheKey, *, check_dependencies: bool = True) -> CacheEntry | None:
        """The published entry for ``key`` if it is intact and up to date; never locks or builds."""
        return self.lookup_why(key, check_dependencies=check_dependencies)[0]

    def lookup_why(
        self, key: CacheKey, *, check_dependencies: bool = True
    ) -> tuple[CacheEntry | None, str | None]:
        """(entry, None) on a hit, else (None, why not) — the reason is None when there is no entry."""
        directory = self.entry_dir(key)
        fix = entry_fix(self.name)
        if not (
            self.prepare(create=False)
            and private_dir(directory, create=False, fix=fix)
            and private_file(directory / MANIFEST_NAME, fix)
        ):
            return None, None
        manifest = Manifest.load(directory)
        if manifest is None:
            return None, None
        if not _plain_name(manifest.artifact) or not private_file(directory / manifest.artifact, fix):
            return None, "the entry is damaged (its library is missing)"
        problem = manifest.verify(directory, key.digest)
        if problem is not None:
            log.warning("cache entry %s is damaged (%s); it will be rebuilt", directory, problem)
            return None, f"the entry is damaged ({problem})"
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
            digest = path.read_text().strip()
        except OSError:
            return None, None
        if len(digest) != 64:
            return None, None
        return self.lookup_why(CacheKey(digest))

    def hit(self, key: CacheKey) -> CacheEntry | None:
        """:meth:`lookup`, recording the use (for `brainevent cache prune`) when it finds the entry."""
        entry = self.lookup(key)
        if entry is not None:
            _touch(entry.directory / MANIFEST_NAME)
        return entry

    @contextlib.contextmanager
    def build_slot(self, key: CacheKey, *, force: bool = False) -> Iterator[BuildSlot]:
        """Holds the entry's build lock and a fresh staging directory for a build of ``key``.

        If another process published the entry while this one waited for the lock (and
        ``force`` is False), the slot carries that entry instead and no staging directory:
        build nothing. The staging directory is removed on leaving, published or not.
        """
        self.prepare(create=True)
        _require_writable(self.module_dir)  # before the lock file: a read-only cache gets a CacheError
        with self._locked(key):
            if not force:
                entry = self.lookup(key)  # another process may have published meanwhile
                if entry is not None:
                    yield BuildSlot(key, None, entry, replace=False)
                    return
            self._remove_abandoned_staging(key)
            try:
                staging = Path(
                    tempfile.mkdtemp(prefix=f".staging-{key.short}-{os.getpid()}-", dir=self.module_dir)
                )
            except OSError as exc:
                raise _cannot_build_error(self.module_dir, exc.strerror) from exc
            try:
                yield BuildSlot(key, staging, None, replace=force)
            finally:
                shutil.rmtree(staging, ignore_errors=True)

    def publish(self, slot: BuildSlot, manifest: Manifest) -> CacheEntry:
        """Writes ``manifest`` into the slot's staging directory and moves it into place."""
        if slot.staging is None:
            raise ValueError("this build slot holds an entry another process published; nothing to publish")
        staging, key = slot.staging, slot.key
        manifest.dump(staging)
        harden_tree(staging, executable=manifest.artifact)  # whatever the umask
        manifest.record_artifact(staging)  # rename keeps size and mtime
        manifest.dump(staging)
        self._publish(staging, self.entry_dir(key), key, replace=slot.replace)
        # What was just built is what this process asked for, even if a file it read changed
        # meanwhile (then the entry records that, and the next load rebuilds).
        entry = self.lookup(key, check_dependencies=False)
        if entry is None:
            raise CacheError(
                f"the entry just published at {self.entry_dir(key)} does not verify; the cache "
                "directory may be on a failing or full disk. Clear it with `brainevent cache clear`.",
                path=str(self.entry_dir(key)),
            )
        return CacheEntry(entry.directory, entry.manifest, built_now=True)

    # -- internals -----------------------------------------------------------------------------

    def _publish(self, staging: Path, final: Path, key: CacheKey, *, replace: bool) -> None:
        """Move a finished build into place; an intact entry already there always wins.

        Safe without the lock (e.g. a cache on a network filesystem with node-local
        locks): content addressing makes concurrent builds of one key equivalent, so
        losing the race only wastes the loser's work.
        """
        try:
            os.rename(staging, final)
            return
        except OSError:
            pass  # the final directory exists
        if not replace and self.lookup(key) is not None:
            log.debug("%s was published by another builder; keeping it", final)
            return
        # Damaged, incomplete or being force-rebuilt: move it aside, then publish ours.
        trash = Path(tempfile.mkdtemp(prefix=".trash-", dir=self.module_dir))
        with contextlib.suppress(FileNotFoundError):
            os.rename(final, trash / "old")
        try:
            os.rename(staging, final)
        except OSError as exc:
            log.debug("publish of %s lost a race: %s", final, exc)
        shutil.rmtree(trash, ignore_errors=True)

    def _remove_abandoned_staging(self, key: CacheKey) -> None:
        prefix = f".staging-{key.short}-"
        for child in self.module_dir.iterdir():
            if not child.name.startswith(prefix):
                continue
            pid_text = child.name[len(prefix) :].split("-", 1)[0]
            if pid_text.isdigit() and not _pid_alive(int(pid_text)):
                shutil.rmtree(child, ignore_errors=True)

    @contextlib.contextmanager
    def _locked(self, key: CacheKey) -> Iterator[None]:
        if not config.USE_LOCKS.get():
            yield  # correctness rests on content addressing and atomic publish alone
            return
        import filelock  # only builds lock

        lock = filelock.FileLock(str(self.lock_path(key)), mode=0o600)
        owner_path = self.module_dir / f"{key.short}.owner"
        deadline = time.monotonic() + config.LOCK_TIMEOUT.get()
        poll = 0.05
        announced = False
        while True:
            try:
                lock.acquire(timeout=poll)
                break
            except filelock.Timeout:
                holder = _read_owner(owner_path)
                if not announced or poll >= 2.0:
                    log.info(
                        "waiting for the build lock of %s (%s), held by %s",
                        self.name,
                        self.lock_path(key),
                        holder,
                    )
                    announced = True
                if time.monotonic() >= deadline:
                    raise CacheError(
                        f"gave up after {config.LOCK_TIMEOUT.get():.0f} s waiting for the build lock "
                        f"{self.lock_path(key)}, held by {holder}. If that build is stuck, stop it; "
                        "raise BRAINEVENT_LOCK_TIMEOUT to wait longer.",
                        lock_path=str(self.lock_path(key)),
                        holder=holder,
                    ) from None
                poll = min(poll * 2, 2.0)
            except OSError as exc:  # not a Timeout: e.g. a symbolic link planted where the lock goes
                raise CacheError(
                    f"cannot take the build lock {self.lock_path(key)}: {exc.strerror or exc}. Remove "
                    f"that file (`brainevent cache clear {self.name}`) or point BRAINEVENT_CACHE_DIR at "
                    "a directory only you can write.",
                    lock_path=str(self.lock_path(key)),
                ) from None
        try:
            with contextlib.suppress(OSError):
                record = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
                write_private(owner_path, json.dumps(record).encode())
            yield
        finally:
            with contextlib.suppress(OSError):
                owner_path.unlink()
            lock.release()


def _plain_name(name: object) -> bool:
    """A file name inside the entry: a manifest never points elsewhere."""
    return isinstance(name, str) and bool(name) and "/" not in name and not name.startswith(".")


def _touch(path: Path) -> None:
    with contextlib.suppress(OSError):  # a read-only cache still serves hits
        os.utime(path)


def _read_owner(path: Path) -> str:
    try:
        if not private_file(path):  # never read a planted link (to a FIFO, say)
            return "another process"
        data = json.loads(path.read_text())
        since = time.strftime("%H:%M:%S", time.localtime(float(data["since"])))
        return f"pid {data['pid']} on {data['host']} since {since}"
    except (OSError, ValueError, KeyError, TypeError, CacheError):
        return "another process"
