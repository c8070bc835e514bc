"""Compiled kernels cached on disk through brainevent.cache. The key holds what is known before a
compile; what it read is NVRTC's own record, re-checked on every hit (docs/nvrtc.md). A hit never
loads or starts NVRTC."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from ..cache import cache_root
from ..cache.deps import first_stale
from ..cache.key import CacheKey, KeyBuilder
from ..cache.store import CacheEntry, EntryStore
from .compiler import Compiled
from .source import KernelSource

STORE_NAME = "nvrtc"  # entries live under <cache>/v1/nvrtc/<key>/
log = logging.getLogger("brainevent.cache")


@dataclass(frozen=True)
class Request:
    """Everything a compile depends on, as the user gave it."""

    source: KernelSource
    name_expressions: tuple[str, ...]
    arch: str  # "sm_90" (cubin) or "compute_90" (PTX)


def key_of(request: Request) -> CacheKey:
    from .toolkit import runtime_include_dirs

    source = request.source
    return (
        KeyBuilder("nvrtc-kernel")
        .add("source", source.data)
        .add("program_name", source.program_name)
        .add("name_expressions", list(request.name_expressions))
        .add("arch", request.arch)
        .add("options", list(source.options))
        .add("include_dirs", list(source.include_dirs))
        .add("runtime_include_dirs", list(runtime_include_dirs()))
        .add("nvrtc", nvrtc_identity())
        .finish()
    )


def nvrtc_identity() -> str:
    """The libnvrtc a compile would use: its real path, size and modification time."""
    from ..fileio import file_identity
    from .toolkit import locate_nvrtc

    return file_identity(locate_nvrtc().path)


class _Known(NamedTuple):
    """A result of this process, and the record of what its compile read (since_ns < 0: unknown)."""

    compiled: Compiled
    dependencies: dict[str, list[Any]]
    since_ns: int


# This process's results by cache root and key: a second trace reads no file but the headers' stats.
_memo: dict[tuple[str, str], _Known] = {}


def compile_cached(request: Request, *, build_directory: str | None = None) -> tuple[Compiled, bool]:
    """``(compiled kernel, built now)`` for ``request``, from this process, the disk cache, or NVRTC."""
    key = key_of(request)
    root = cache_root(build_directory)
    memo_key = (str(root), key.digest)
    found = _memo.get(memo_key)
    if found is not None and (
        not found.dependencies or first_stale(found.dependencies, found.since_ns) is None
    ):
        return found.compiled, False
    store = EntryStore(root, STORE_NAME)
    entry = store.hit(key)
    known, built_now = (_build(store, key, request), True) if entry is None else (_read_entry(entry), False)
    if known.since_ns >= 0:  # not a compile whose reads are unknown: those are never reused
        _memo[memo_key] = known
    return known.compiled, built_now


def _read_entry(entry: CacheEntry) -> _Known:
    """The entry's kernel (its manifest passed records.manifest's checks of kind and lowered)."""
    manifest = entry.manifest
    compiled = Compiled(entry.library.read_bytes(), manifest.inputs["kind"], dict(manifest.inputs["lowered"]))
    return _Known(compiled, manifest.dependencies, manifest.dependencies_since_ns)


def _build(store: EntryStore, key: CacheKey, request: Request) -> _Known:
    from .process import prestart

    prestart()  # NVRTC's process starts while this one imports the build's modules and takes the lock
    from ..cache.deps import record, snapshot
    from ..cache.manifest import Manifest
    from ..cache.publish import build_slot, disk_full_guard, publish
    from ..fileio import atomic_write
    from .compiler import base_options, compile_error, compile_source
    from .toolkit import runtime_include_dirs

    source, names, arch = request.source, request.name_expressions, request.arch
    traced = not source.includes_nothing()
    with disk_full_guard(store, f"{STORE_NAME} ({source.where})"), build_slot(store, key) as slot:
        if slot.staging is None and slot.existing is not None:  # another process built it meanwhile
            return _read_entry(slot.existing)
        assert slot.staging is not None
        before = snapshot(_likely_reads(request, store, key)) if traced else {}
        started_ns, started = time.time_ns(), time.monotonic()
        options = [*base_options(arch, [*source.search_dirs(), *runtime_include_dirs()]), *source.options]
        compiled, nvrtc_log, read = compile_source(
            source.data, source.program_name, names, arch, options, slot.staging, traced=traced
        )
        if compiled is None:
            failed_log = store.failed_log_path(key)
            with contextlib.suppress(OSError):
                atomic_write(failed_log, nvrtc_log)
            raise compile_error(nvrtc_log, source, arch, ", ".join(names), failed_log)
        if read is None:  # never published: nothing could tell when it goes stale
            log.warning(
                "NVRTC did not report the headers it read; %s is compiled again in each process", source.where
            )
            return _Known(compiled, {}, -1)
        dependencies = record(read, before=before, started_ns=started_ns, skip_dirs=())
        artifact = f"kernel.{compiled.kind}"
        atomic_write(slot.staging / artifact, compiled.code)
        atomic_write(slot.staging / "build.log", compiled.log)
        inputs = {
            "kind": compiled.kind,
            "lowered": compiled.lowered,
            "arch": arch,
            "name_expressions": list(names),
            "options": list(source.options),
            "include_dirs": list(source.include_dirs),
        }
        manifest = Manifest(
            key=key.digest,
            name=source.where,
            platform="cuda",
            artifact=artifact,
            artifact_sha256=hashlib.sha256(compiled.code).hexdigest(),
            functions={},
            variant=inputs,  # every input tells a kernel's builds apart
            inputs=inputs,
            created=time.time(),
            build_seconds=time.monotonic() - started,
            dependencies=dependencies,
            dependencies_since_ns=started_ns,
        )
        publish(store, slot, manifest)
    return _Known(compiled, dependencies, started_ns)


# How many files of each of the user's include directories are stat'ed before a compile.
_LISTED = 1000


def _likely_reads(request: Request, store: EntryStore, key: CacheKey) -> list[str]:
    """What the compile will probably read, to stat before it starts (cache/deps.py): what the last
    build of this key read, the source's include lines, the files of the user's include directories
    (a header named by a macro is one). Not the runtime headers: scanning CCCL costs 0.2-0.7 s."""
    from ..build.includes import header_texts
    from ..cache.manifest import Manifest
    from .toolkit import runtime_include_dirs

    source = request.source
    here = Path(source.path).parent if source.path else None
    users = [*source.search_dirs(), *source.option_dirs()]
    previous = Manifest.load(store.entry_dir(key))
    runtime = [Path(d) for d in runtime_include_dirs()]
    found = [*header_texts([(source.text, here)], [Path(d) for d in users] + runtime, skip_dirs=runtime)]
    for directory in users:
        with contextlib.suppress(OSError), os.scandir(directory) as entries:
            found += [e.path for e, _ in zip(entries, range(_LISTED), strict=False)]
    return [*found, *(previous.dependencies if previous else ())]


def forget_process_memo() -> None:
    """Drop this process's results (tests that rebuild from the disk cache)."""
    _memo.clear()
