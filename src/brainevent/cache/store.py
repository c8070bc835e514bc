"""Get-or-build over a directory of published entries.

Layout under the cache root::

    v1/<module name>/<key>/            a published entry: artifact, manifest.json, build.log, sources
    v1/<module name>/<key>.lock        the per-entry build lock (filelock)
    v1/<module name>/<key>.owner       who holds that lock, for log lines
    v1/<module name>/.staging-<key>-<pid>-<random>/   a build in progress

An entry is built in a staging directory and published with one ``rename``;
readers never take the lock, so a hit costs a manifest read and a checksum. A
failed build publishes nothing; a corrupt entry is rebuilt under the lock.
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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .. import config
from ..errors import CacheError
from .key import CacheKey
from .manifest import MANIFEST_NAME, Manifest

log = logging.getLogger("brainevent.cache")

LAYOUT_VERSION = "v1"


def cache_root(build_directory: str | os.PathLike[str] | None = None) -> Path:
    if build_directory is not None:
        return Path(build_directory).expanduser()
    return config.CACHE_DIR.get()


@dataclass(frozen=True)
class CacheEntry:
    directory: Path
    manifest: Manifest
    built_now: bool  # False on a cache hit

    @property
    def artifact(self) -> Path:
        return self.directory / self.manifest.artifact


def _make_private_dir(path: Path, root: Path | None = None) -> None:
    """Creates ``path`` (and the cache root above it) readable by this user only."""
    try:
        if root is not None and not root.exists():
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise CacheError(
            f"cannot create cache directory {path}: {exc.strerror}. Point BRAINEVENT_CACHE_DIR "
            "(or build_directory=) at a writable directory.",
            path=str(path),
        ) from exc


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


def untrusted_reason(path: Path) -> str | None:
    """Why ``path`` cannot be trusted to hold code we load, or None.

    A file or directory that another user owns, or that other users may write, could
    have been swapped for malicious code: loading it would run that code in this process.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"cannot stat {path}: {exc.strerror}"
    uid = os.getuid()
    if st.st_uid != uid:
        return f"{path} is owned by uid {st.st_uid}, not by this user (uid {uid})"
    if st.st_mode & 0o022:
        return f"{path} is writable by other users (mode {st.st_mode & 0o777:o})"
    return None


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

    def lock_path(self, key: CacheKey) -> Path:
        return self.module_dir / f"{key.short}.lock"

    def failed_log_path(self, key: CacheKey) -> Path:
        return self.module_dir / f"{key.short}.failed.log"

    def lookup(self, key: CacheKey) -> CacheEntry | None:
        """The published entry for ``key`` if it is intact; never locks, never builds."""
        directory = self.entry_dir(key)
        manifest = Manifest.load(directory)
        if manifest is None:
            return None
        for path in (directory, directory / manifest.artifact):
            reason = untrusted_reason(path)
            if reason is not None:
                raise CacheError(
                    f"refusing to load from the cache: {reason}. Someone else could have replaced the "
                    f"compiled code. Remove the entry (`brainevent cache clear {self.name}`) or point "
                    "BRAINEVENT_CACHE_DIR at a directory only you can write.",
                    path=str(path),
                )
        problem = manifest.verify(directory, key.digest)
        if problem is not None:
            log.warning("cache entry %s is damaged (%s); it will be rebuilt", directory, problem)
            return None
        return CacheEntry(directory, manifest, built_now=False)

    def alias_path(self, portable: CacheKey) -> Path:
        return self.module_dir / f"{portable.short}.alias"

    def write_alias(self, portable: CacheKey, key: CacheKey) -> None:
        """Records that ``portable`` (a key without toolchain identity) was last built as ``key``."""
        with contextlib.suppress(OSError):
            fd, tmp = tempfile.mkstemp(prefix=".alias-", dir=self.module_dir)
            with os.fdopen(fd, "w") as fh:
                fh.write(key.digest)
            os.replace(tmp, self.alias_path(portable))

    def lookup_alias(self, portable: CacheKey) -> CacheEntry | None:
        try:
            digest = self.alias_path(portable).read_text().strip()
        except OSError:
            return None
        return self.lookup(CacheKey(digest)) if len(digest) == 64 else None

    def get_or_build(
        self, key: CacheKey, build: Callable[[Path], Manifest], *, force: bool = False
    ) -> CacheEntry:
        if not force:
            entry = self.lookup(key)
            if entry is not None:
                _touch(entry.directory / MANIFEST_NAME)  # last use, for `brainevent cache prune`
                return entry
        _make_private_dir(self.module_dir, self.root)
        _require_writable(self.module_dir)  # before the lock file: a read-only cache gets a CacheError
        with self._locked(key):
            if not force:
                entry = self.lookup(key)  # another process may have published meanwhile
                if entry is not None:
                    return entry
            self._remove_abandoned_staging(key)
            try:
                staging = Path(
                    tempfile.mkdtemp(prefix=f".staging-{key.short}-{os.getpid()}-", dir=self.module_dir)
                )
            except OSError as exc:
                raise _cannot_build_error(self.module_dir, exc.strerror) from exc
            try:
                manifest = build(staging)
                manifest.record_artifact(staging)  # rename keeps size and mtime
                manifest.dump(staging)
                self._publish(staging, self.entry_dir(key), key, replace=force)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
        entry = self.lookup(key)
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

        lock = filelock.FileLock(str(self.lock_path(key)))
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
        try:
            with contextlib.suppress(OSError):
                owner_path.write_text(
                    json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()})
                )
            yield
        finally:
            with contextlib.suppress(OSError):
                owner_path.unlink()
            lock.release()


def _touch(path: Path) -> None:
    with contextlib.suppress(OSError):  # a read-only cache still serves hits
        os.utime(path)


def _read_owner(path: Path) -> str:
    try:
        data = json.loads(path.read_text())
        since = time.strftime("%H:%M:%S", time.localtime(float(data["since"])))
        return f"pid {data['pid']} on {data['host']} since {since}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"
