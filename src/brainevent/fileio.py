"""Small file helpers every stage shares: atomic writes, file identity, content digests.

Each was written more than once before; keeping one copy keeps their guarantees (no
half-written file, one meaning of "the same file", one digest format) the same everywhere.
Only the standard library is imported, and only when a helper runs.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

StrPath = str | os.PathLike[str]


def atomic_write(path: StrPath, data: bytes) -> None:
    """Writes ``path`` through a new private file (mode 0600) renamed into place.

    Readers see the old or the new contents, never half of them, and a link or file planted
    at ``path`` is replaced rather than written through.
    """
    import tempfile

    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def size_and_mtime(path: StrPath) -> tuple[int, int]:
    """``(size, mtime_ns)`` of ``path`` (links followed): what changes when a file is rewritten.

    Raises OSError when ``path`` cannot be read.
    """
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


def file_identity(path: StrPath, *, missing_ok: bool = True) -> str:
    """A cheap identity of a file for cache keys, from ``stat`` alone: its real path, size and
    modification time, so it changes whenever the file is replaced.

    A file that cannot be read is ``"<real path>:missing"``, or an OSError when not ``missing_ok``.
    """
    real = os.path.realpath(path)
    try:
        size, mtime_ns = size_and_mtime(real)
    except OSError:
        if not missing_ok:
            raise
        return f"{real}:missing"
    return f"{real}:{size}:{mtime_ns}"


def sha256_file(path: StrPath) -> str:
    """The SHA-256 hex digest of a file's contents, read in blocks."""
    import hashlib

    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


__all__ = ["atomic_write", "file_identity", "sha256_file", "size_and_mtime"]
