"""Compiled objects cached by content, so a multi-file module rebuilds only what changed.

An object's key covers its compile command (relative paths only), the bytes of its
input, the project headers it reaches, and the toolchain identity. Objects are
published with an atomic rename, so a reader sees a whole object or none.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from ..build.step import BuildStep


class ObjectCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def key(self, build_dir: Path, step: BuildStep, headers: dict[str, str], salt: str) -> str:
        digest = hashlib.sha256()
        for part in step.command:
            digest.update(part.encode() + b"\0")
        for name in step.inputs:
            digest.update(b"input\0" + (build_dir / name).read_bytes() + b"\0")
        for path, sha in sorted(headers.items()):
            digest.update(f"header\0{path}\0{sha}\0".encode())
        digest.update(salt.encode())
        return digest.hexdigest()[:40]

    def fetch(self, key: str, destination: Path) -> bool:
        source = self.directory / f"{key}.o"
        try:
            shutil.copyfile(source, destination)
        except OSError:
            return False
        return True

    def publish(self, key: str, source: Path) -> None:
        with contextlib.suppress(OSError):  # a cache of objects is an optimisation only
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".obj-", dir=self.directory)
            os.close(fd)
            shutil.copyfile(source, tmp)
            os.replace(tmp, self.directory / f"{key}.o")
