"""Small file helpers every stage shares: atomic writes, file identity, content digests.

Each was written more than once before; keeping one copy keeps their guarantees (no
half-written file, one meaning of "the same file", one digest format) the same everywhere.
Only the standard library is imported, and only when a helper runs.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

StrPath = str | os.PathLike[str]

# Read size of read_blocks: large enough that a header is one read, small enough that the
# buffer is not a fresh memory mapping each time (hashlib.file_digest's 256 KiB buffer was
# most of the cost of hashing a 27 KB header here).
_BLOCK = 1 << 16


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


def read_blocks(path: StrPath) -> Iterator[bytes]:
    """A file's contents in blocks, read through the file descriptor: an open file object's
    buffering and checks cost more system calls than the read itself for small files."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        while block := os.read(fd, _BLOCK):
            yield block
    finally:
        os.close(fd)


def sha256_file(path: StrPath) -> str:
    """The SHA-256 hex digest of a file's contents, read in blocks."""
    import hashlib

    digest = hashlib.sha256()
    for block in read_blocks(path):
        digest.update(block)
    return digest.hexdigest()


__all__ = ["atomic_write", "file_identity", "read_blocks", "sha256_file", "size_and_mtime"]
