"""Compiled kernels cached on disk through brainevent.cache (key schema, trust checks, lock,
atomic publish). The key holds everything that changes the code: source, options, names, arch,
NVRTC's release, reachable headers' text, and the toolkit headers' identity. A hit never loads NVRTC.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from ..cache import cache_root
from ..cache.key import CacheKey, KeyBuilder
from ..cache.store import CacheEntry, EntryStore
from .compiler import Compiled
from .source import KernelSource

STORE_NAME = "nvrtc"  # entries live under <cache>/v1/nvrtc/<key>/


@dataclass(frozen=True)
class Request:
    """Everything a compile depends on, as the user gave it."""

    source: KernelSource
    name_expressions: tuple[str, ...]
    arch: str  # "sm_90" (cubin) or "compute_90" (PTX)


def key_of(request: Request) -> CacheKey:
    from ..build.includes import header_texts
    from .toolkit import nvrtc_identity

    source = request.source
    here = Path(source.path).parent if source.path else None
    unresolved: set[str] = set()
    headers = header_texts(
        [(source.text, here)], [Path(d) for d in source.search_dirs()], unresolved=unresolved
    )
    key = (
        KeyBuilder("nvrtc-kernel")
        .add("source", source.text)
        .add("program_name", source.program_name)
        .add("name_expressions", list(request.name_expressions))
        .add("arch", request.arch)
        .add("options", list(source.options))
        .add("include_dirs", list(source.include_dirs))
        .add("headers", headers)
        .add("nvrtc", nvrtc_identity())
    )
    if unresolved:  # the toolkit's headers: which ones, and where they are now
        key.add("toolkit_headers", _toolkit_headers(sorted(unresolved)))
    return key.finish()


def _toolkit_headers(names: list[str]) -> dict[str, str]:
    """``{include target: file identity}`` in the runtime header directories (a stat each)."""
    from ..fileio import file_identity
    from .toolkit import runtime_include_dirs

    found = {n: [p for d in runtime_include_dirs() if os.path.isfile(p := os.path.join(d, n))] for n in names}
    return {n: file_identity(paths[0]) if paths else "not found" for n, paths in found.items()}


# This process's results by cache root and key (a dict's get and set are atomic): a second trace
# reads no file.
_memo: dict[tuple[str, str], Compiled] = {}


def compile_cached(request: Request, *, build_directory: str | None = None) -> tuple[Compiled, bool]:
    """``(compiled kernel, built now)`` for ``request``, from this process, the disk cache, or NVRTC."""
    key = key_of(request)
    root = cache_root(build_directory)
    memo_key = (str(root), key.digest)
    found = _memo.get(memo_key)
    if found is not None:
        return found, False
    store = EntryStore(root, STORE_NAME)
    entry = store.hit(key)
    compiled, built_now = _build(store, key, request) if entry is None else (_read_entry(entry), False)
    _memo[memo_key] = compiled
    return compiled, built_now


def _read_entry(entry: CacheEntry) -> Compiled:
    lowered, kind = entry.manifest.inputs.get("lowered", {}), entry.manifest.inputs.get("kind", "cubin")
    return Compiled(entry.library.read_bytes(), str(kind), dict(lowered) if isinstance(lowered, dict) else {})


def _build(store: EntryStore, key: CacheKey, request: Request) -> tuple[Compiled, bool]:
    from ..cache.manifest import Manifest
    from ..cache.publish import build_slot, publish
    from ..fileio import atomic_write
    from .compiler import base_options, compile_error, compile_source
    from .toolkit import runtime_include_dirs

    with build_slot(store, key) as slot:
        if slot.staging is None and slot.existing is not None:  # another process built it meanwhile
            return _read_entry(slot.existing), False
        assert slot.staging is not None
        started = time.monotonic()
        source, names, arch = request.source, request.name_expressions, request.arch
        options = [*base_options(arch, [*source.search_dirs(), *runtime_include_dirs()]), *source.options]
        compiled, log = compile_source(source.text, source.program_name, names, arch, options)
        if compiled is None:
            raise compile_error(log, source, arch, ", ".join(names))
        artifact = f"kernel.{compiled.kind}"
        atomic_write(slot.staging / artifact, compiled.code)
        atomic_write(slot.staging / "build.log", compiled.log)
        manifest = Manifest(
            key=key.digest,
            name=source.where,
            platform="cuda",
            artifact=artifact,
            artifact_sha256=hashlib.sha256(compiled.code).hexdigest(),
            functions={},
            inputs={
                "kind": compiled.kind,
                "lowered": compiled.lowered,
                "arch": arch,
                "name_expressions": list(names),
                "options": list(source.options),
                "include_dirs": list(source.include_dirs),
            },
            created=time.time(),
            build_seconds=time.monotonic() - started,
        )
        publish(store, slot, manifest)
    return compiled, True


def forget_process_memo() -> None:
    """Drop this process's results (tests that rebuild from the disk cache)."""
    _memo.clear()
