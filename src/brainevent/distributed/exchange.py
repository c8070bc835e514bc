"""The compile-once protocol over the coordination service's key-value store.

Keys, under ``brainevent/<module name>/<cache key>/``: ``claim`` (an atomic counter: the first
taker builds), ``builder``, ``chunk/<i>`` (the entry's tar, in pieces of at most CHUNK_BYTES)
and ``status``, written last, the error too. The protocol: docs/multi-gpu.md, "One compile per
job". Unpacking accepts only plain relative names and regular files.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from .. import config, errors
from ..cache import records
from ..cache.key import CacheKey
from ..cache.manifest import Manifest
from ..cache.store import CacheEntry, EntryStore
from ..errors import BrainEventError, CacheError, CompileError
from ..fileio import atomic_write, make_dir

log = logging.getLogger("brainevent.distributed")

# The largest value written in one call. jaxlib 0.10's coordination service took single
# values of 128 MiB (measured), but gRPC's default message limit is 4 MiB, which other
# releases or a proxy in between may keep; 4 MiB chunks move at about 100-150 MiB/s on one host.
CHUNK_BYTES = 4 * 1024 * 1024
_LOG_EVERY_S = 10.0  # how often a waiting process says that it still waits
FALLBACK = "Set BRAINEVENT_DISTRIBUTED_BUILD=0 to compile in every process."  # ends every refusal
# Besides tarfile's own: a truncated archive, or members whose paths collide (a file where a directory goes).
_MALFORMED = (EOFError, ValueError, NotADirectoryError, IsADirectoryError, FileExistsError)


def get_or_build(
    store: EntryStore, key: CacheKey, build: Callable[[], CacheEntry], *, force: bool = False
) -> CacheEntry:
    """``build()`` (a local build of ``key`` into ``store``), done once per job after a local miss;
    just ``build()`` outside a multi-process job, with ``force`` or BRAINEVENT_DISTRIBUTED_BUILD=0."""
    kv = None if force or not config.DISTRIBUTED_BUILD.get() else current()
    if kv is None:
        return build()
    prefix = f"brainevent/{store.name}/{key.digest}"
    if kv.claim(f"{prefix}/claim"):
        return _build_and_share(kv, prefix, store, build)
    try:
        return _receive(kv, prefix, store, key)
    except records.RecordError as exc:
        # A status that does not match its schema describes nothing: compile here, as without a job.
        log.warning("module %s: the job's build record is malformed (%s); compiling here", store.name, exc)
        return build()


def _build_and_share(
    kv: KeyValue, prefix: str, store: EntryStore, build: Callable[[], CacheEntry]
) -> CacheEntry:
    kv.put(f"{prefix}/builder", str(kv.process_id).encode())
    log.info("building module %s for all %d processes of the job", store.name, kv.num_processes)
    try:
        entry = build()
        data = pack(entry.directory)
    except BaseException as exc:  # an interrupt too: the others must not wait for nothing
        _publish_status(kv, prefix, _error_record(exc))
        raise
    started = time.monotonic()
    chunks = [data[i : i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)] or [b""]
    for i, chunk in enumerate(chunks):
        kv.put(f"{prefix}/chunk/{i}", chunk)
    digest, size = hashlib.sha256(data).hexdigest(), len(data)
    _publish_status(kv, prefix, {"state": "ok", "sha256": digest, "size": size, "chunks": len(chunks)})
    took = time.monotonic() - started
    log.info(
        "published module %s to the job: %d bytes in %d chunk(s), %.2f s", store.name, size, len(chunks), took
    )
    return entry


def _receive(kv: KeyValue, prefix: str, store: EntryStore, key: CacheKey) -> CacheEntry:
    from ..cache.publish import build_slot, publish

    timeout = config.DISTRIBUTED_TIMEOUT.get()
    deadline = time.monotonic() + timeout
    status = _wait_for_status(kv, prefix, store.name, deadline, timeout)
    if status.get("state") != "ok":
        raise _rebuild_error(status, store.name)

    def refused(why: str) -> CacheError:
        return CacheError(f"module {store.name!r} {why}. {FALLBACK}", module=store.name)

    def fill(staging: Path) -> Manifest:
        started = time.monotonic()
        pieces = []
        for i in range(int(status["chunks"])):
            piece = kv.get(f"{prefix}/chunk/{i}", max(deadline - time.monotonic(), 1.0))
            if piece is None:
                raise refused(f"lacks part {i} in the job's key-value store, announced by its builder")
            pieces.append(piece)
        data = b"".join(pieces)
        digest = hashlib.sha256(data).hexdigest()
        if len(data) != status["size"] or digest != status["sha256"]:
            why = f"sha256 {digest[:16]}, expected {str(status['sha256'])[:16]}"
            raise refused(f"arrived damaged from the job's builder ({why})")
        unpack(data, staging)
        manifest = Manifest.load(staging)
        problem = "its manifest is missing" if manifest is None else manifest.verify(staging, key.digest)
        if manifest is None or problem is not None:
            raise refused(f"from the job's builder does not verify: {problem}")
        took = time.monotonic() - started
        log.info("received module %s from the job's builder: %d bytes in %.2f s", store.name, len(data), took)
        return manifest

    # The normal publish path (lock, staging, atomic rename): in a cache shared with the
    # builder the entry is already there and nothing is written.
    with build_slot(store, key) as slot:
        if slot.staging is None:  # the cache is shared with the builder: already there
            assert slot.existing is not None
            entry = slot.existing
        else:
            entry = publish(store, slot, fill(slot.staging))
    return CacheEntry(entry.directory, entry.manifest, built_now=False)  # not compiled here


def _wait_for_status(kv: KeyValue, prefix: str, name: str, deadline: float, timeout: float) -> dict[str, Any]:
    while True:
        raw = kv.get(f"{prefix}/status", min(max(deadline - time.monotonic(), 0.001), _LOG_EVERY_S))
        if raw is not None:
            return records.distributed_status(raw, f"{prefix}/status", CHUNK_BYTES)
        raw = kv.get(f"{prefix}/builder", 0.1)  # set by now unless the builder just started
        builder = f"process {raw.decode(errors='replace')}" if raw else "the job's builder"
        if time.monotonic() >= deadline:
            raise CompileError(
                f"gave up after {timeout:.0f} s waiting for {builder} to build module {name!r} for "
                "this jax.distributed job. If that process died or hangs, restart the job; if builds "
                "are just slow, raise BRAINEVENT_DISTRIBUTED_TIMEOUT; BRAINEVENT_DISTRIBUTED_BUILD=0 "
                "makes every process compile for itself.",
                module=name,
                timed_out=True,
                timeout_s=timeout,
            )
        so_far = timeout - (deadline - time.monotonic())
        log.info(
            "waiting for %s to build module %s (%.0f s so far, of %.0f s)", builder, name, so_far, timeout
        )


def _publish_status(kv: KeyValue, prefix: str, record: dict[str, Any]) -> None:
    try:
        kv.put(f"{prefix}/status", json.dumps(record).encode())
    except Exception as exc:  # the coordination service is gone: the job is failing anyway
        log.warning("could not tell the job's other processes the build outcome: %s", exc)


def _error_record(exc: BaseException) -> dict[str, Any]:
    if not isinstance(exc, BrainEventError):
        exc = CompileError(f"building the module failed with {type(exc).__name__}: {exc}")
    data = {k: v for k, v in exc.data.items() if _plain(v)}
    return {"state": "error", "type": type(exc).__name__, "message": exc.message, "data": data}


def _plain(value: object) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _rebuild_error(record: dict[str, Any], name: str) -> BrainEventError:
    """The builder's error, of its type (one of brainevent.errors), in this process."""
    cls = getattr(errors, str(record.get("type")), None)
    if not (isinstance(cls, type) and issubclass(cls, BrainEventError)):
        cls = CompileError
    message = f"{record.get('message', '')}\n(raised where module {name!r} was built for this job)"
    # Made as unpickling makes it: a subclass's own __init__ never sees the peer's fields.
    return errors._rebuild(cls, message, record.get("data", {}))  # a dict: records.distributed_status


def pack(directory: Path) -> bytes:
    import tarfile  # slow to import: only a job's builder and receivers need it

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(directory.rglob("*")):
            if path.is_file() and not path.is_symlink():
                tar.add(path, arcname=path.relative_to(directory).as_posix(), recursive=False)
    return buffer.getvalue()


def unpack(data: bytes, staging: Path) -> None:
    """Writes the archive's plain files under ``staging``; CacheError on anything else."""
    import tarfile

    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            for member in tar.getmembers():
                name = PurePosixPath(member.name)
                if not member.isfile() or name.is_absolute() or ".." in name.parts or not name.parts:
                    raise CacheError(
                        f"the module archive received from the job's builder holds {member.name!r}, "
                        f"which is not a plain file inside the entry; the transfer was refused. {FALLBACK}",
                        path=member.name,
                    )
                target = staging.joinpath(*name.parts)
                make_dir(target.parent, parents=True)
                source = tar.extractfile(member)
                assert source is not None  # a regular file always has contents
                atomic_write(target, source.read())
    except (tarfile.TarError, *_MALFORMED) as exc:
        raise CacheError(
            f"the module archive received from the job's builder is malformed ({type(exc).__name__}: "
            f"{exc}); the transfer was refused. {FALLBACK}",
            path=str(staging),
        ) from None


class KeyValue:
    """One process's view of the job's key-value store (found without initialising anything).
    Every supported jaxlib (jax >= 0.10.2) has bytes values and an atomic increment."""

    def __init__(self, client: Any, process_id: int, num_processes: int) -> None:
        self._client = client
        self.process_id = process_id
        self.num_processes = num_processes

    def claim(self, key: str) -> bool:
        """True for exactly one caller per key over the whole job: the first to ask."""
        return int(self._client.key_value_increment(key, 1)) == 1

    def put(self, key: str, value: bytes) -> None:
        self._client.key_value_set_bytes(key, value, allow_overwrite=True)

    def get(self, key: str, timeout_s: float) -> bytes | None:
        """The value, waiting up to ``timeout_s`` for it to be set; None if it was not."""
        try:
            return bytes(self._client.blocking_key_value_get_bytes(key, max(1, int(timeout_s * 1000))))
        except Exception as exc:  # jaxlib raises its own runtime error type
            if "DEADLINE_EXCEEDED" in str(exc):
                return None
            raise


def current() -> KeyValue | None:
    """The running job's store, or None outside a multi-process ``jax.distributed`` job."""
    # None unless JAX imported its distributed runtime (nothing is initialised here).
    state = getattr(sys.modules.get("jax._src.distributed"), "global_state", None)
    client = getattr(state, "client", None)
    count = getattr(state, "num_processes", None)
    if client is None or not isinstance(count, int) or count < 2:
        return None
    return KeyValue(client, int(getattr(state, "process_id", 0) or 0), count)
