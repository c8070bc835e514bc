"""Compiled objects cached by content, so a multi-file module rebuilds only what changed.

An object's key covers its compile command (relative paths only), its input's bytes and the
toolchain identity; it is reused only while every file its compiler read is unchanged
(cache/deps.py), and published with an atomic rename (docs/caching.md, "The object cache").
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from pathlib import Path
from typing import NamedTuple

from ..build.step import BuildStep
from ..fileio import atomic_write, copy_file, read_blocks, sha256_file
from ..trust import private_dir, private_file
from . import records
from .deps import DependencyRecord, first_stale

log = logging.getLogger("brainevent.cache")


class ObjectCache(NamedTuple):
    directory: Path

    def key(self, build_dir: Path, step: BuildStep, salt: str) -> str:
        digest = hashlib.sha256()
        for part in step.command:
            digest.update(part.encode() + b"\0")
        for name in step.inputs:
            digest.update(b"input\0" + (build_dir / name).read_bytes() + b"\0")
        digest.update(salt.encode())
        return digest.hexdigest()[:40]

    def fetch(self, key: str, destination: Path) -> DependencyRecord | None:
        """Copies the object to ``destination`` and returns its dependency record; None when absent
        or a file it was compiled from changed. CacheError when another user could have written it."""
        obj, record = self.directory / f"{key}.o", self.directory / f"{key}.deps.json"
        if not (private_dir(self.directory, create=False) and private_file(record) and private_file(obj)):
            return None
        try:
            where = str(record)
            data = records.object_record(records.parse_json(b"".join(read_blocks(where)), where), where)
            if first_stale(data["dependencies"], data["since_ns"]) is not None:
                return None
            # Verified as every other entry (size, then the sha256 of the copy we link): a
            # damaged object is rebuilt, never linked into this and every later build.
            copy_file(obj, destination)
            if os.path.getsize(destination) != data["size"] or sha256_file(destination) != data["sha256"]:
                log.warning("cached object %s is damaged (size or sha256 differ); it will be rebuilt", obj)
                destination.unlink(missing_ok=True)
                obj.unlink()  # an OSError is a miss too (below)
                return None
        except (OSError, ValueError):  # RecordError is a ValueError: a damaged record is a miss
            return None
        return dict(data["dependencies"])

    def publish(self, key: str, source: Path, deps: DependencyRecord, since_ns: int) -> None:
        private_dir(self.directory, create=True)
        with contextlib.suppress(OSError):  # a cache of objects is an optimisation only
            # The object first, then its record: a reader that finds the record finds the object.
            data = source.read_bytes()
            atomic_write(self.directory / f"{key}.o", data)
            digest = hashlib.sha256(data).hexdigest()
            record = {"dependencies": deps, "since_ns": since_ns, "size": len(data), "sha256": digest}
            atomic_write(self.directory / f"{key}.deps.json", json.dumps(record, sort_keys=True).encode())
