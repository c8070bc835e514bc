"""Content-addressed store of compiled modules: key schema, locks, atomic publish, manifests.

No submodule is imported here, so that importing one does not import the rest. This file
holds what a recalled load (stages/recall.py) reads without the store: where the cache is,
and the sealed record of a call.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any, TypeGuard

from .. import config

LAYOUT_VERSION = "v1"  # the layout under the root: see store.py
MANIFEST_NAME = "manifest.json"  # in each entry (cache/manifest.py)
RECALL_SUFFIX = ".recall"  # a recalled load's record (stages/recall.py)


def cache_root(build_directory: str | os.PathLike[str] | None = None, where: str = "build_directory") -> Path:
    """``build_directory`` (given as ``where``: a loader's argument, a command-line option), read
    as BRAINEVENT_CACHE_DIR is (an empty one counts as unset), else the configured root."""
    given = None if build_directory is None else config.CACHE_DIR.given(os.fspath(build_directory), where)
    return config.CACHE_DIR.get() if given is None else given


def inside_name(name: object) -> TypeGuard[str]:
    """A file name inside its directory: what a manifest or a record names never points elsewhere."""
    return isinstance(name, str) and bool(name) and "/" not in name and not name.startswith(".")


def record_use(entry: Path) -> None:
    """Marks ``entry`` used now, by its directory's mtime (`brainevent cache prune` keeps what was
    used last): the files in it keep their stamps, which a recalled load checks."""
    with contextlib.suppress(OSError):  # a read-only cache still serves hits
        os.utime(entry)


# A recall record is JSON after the SHA-256 of that JSON: one that is truncated, damaged or
# edited fails the seal, so its fields need no schema check (cache/records.py) before use.
def sealed(record: dict[str, Any]) -> bytes:
    body = json.dumps(record).encode()
    return hashlib.sha256(body).hexdigest().encode() + b"\n" + body


def unsealed(raw: bytes) -> dict[str, Any] | None:
    """The record, or None when the seal does not match what follows it."""
    seal, body = raw[:64], raw[65:]
    if raw[64:65] != b"\n" or hashlib.sha256(body).hexdigest().encode() != seal:
        return None
    try:
        record = json.loads(body)
    except ValueError:  # sealed, yet not JSON: not a record brainevent wrote
        return None
    return record if type(record) is dict else None
