"""Small file helpers every stage shares (one copy, so their guarantees are the same everywhere):
the one writer of files and directories, file identity, content digests. Only the standard
library is imported."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

StrPath = str | os.PathLike[str]

# Read size of read_blocks: large enough that a header is one read, small enough that the
# buffer is not a fresh memory mapping each time (hashlib.file_digest's 256 KiB buffer was
# most of the cost of hashing a 27 KB header here).
_BLOCK = 1 << 16


def atomic_write(path: StrPath, data: bytes | str, *, mode: int = 0o600, replace_link: bool = True) -> None:
    """The one way brainevent writes a file (tests/layout/test_one_writer.py refuses any other).

    The data goes to a new file beside ``path`` (created exclusively), which gets exactly
    ``mode`` whatever the umask and is then renamed over ``path``: readers never see half of it,
    and a symbolic link at ``path`` is replaced, never written through. With ``replace_link``
    off, such a link is left alone and a FileExistsError names where it points (a user's
    output whose link is theirs: ``brainevent ide``)."""
    import tempfile

    path = Path(path)
    if not replace_link and path.is_symlink():
        raise FileExistsError(
            errno.EEXIST,
            f"is a symbolic link (to {os.readlink(path)}), which is never written through",
            str(path),
        )
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), mode)
            fh.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if isinstance(exc, OSError) and exc.errno is not None:  # named by the file asked for
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise


def make_dir(path: StrPath, *, mode: int = 0o700, parents: bool = False) -> None:
    """Creates ``path`` (and, with ``parents``, each missing level above it) with exactly
    ``mode`` whatever the umask; an existing directory is left as it is. A symbolic link or a
    file in the way is an OSError (NotADirectoryError, FileExistsError): nothing is made through it."""
    path = Path(path)
    if parents and path.parent != path and not os.path.lexists(path.parent):
        make_dir(path.parent, mode=mode, parents=True)
    try:
        os.mkdir(path, mode)
        os.chmod(path, mode)  # exactly: mkdir took the umask's bits away
    except FileExistsError:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            raise NotADirectoryError(
                errno.ENOTDIR, "is a symbolic link, not a directory", str(path)
            ) from None
        if not stat.S_ISDIR(st.st_mode):
            raise


def copy_file(source: StrPath, destination: StrPath, *, mode: int = 0o600) -> None:
    """``source``'s contents (a regular file: see :func:`read_blocks`) written to ``destination``
    through :func:`atomic_write`."""
    atomic_write(destination, b"".join(read_blocks(source)), mode=mode)


def size_and_mtime(path: StrPath) -> tuple[int, int]:
    """``(size, mtime_ns)`` of ``path`` (links followed; OSError if unreadable)."""
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


def file_identity(path: StrPath, *, missing_ok: bool = True) -> str:
    """``"<real path>:<size>:<mtime_ns>"``, a cheap identity for cache keys; an unreadable file is
    ``"<real path>:missing"``, or an OSError when not ``missing_ok``."""
    real = os.path.realpath(path)
    try:
        size, mtime_ns = size_and_mtime(real)
    except OSError:
        if not missing_ok:
            raise
        return f"{real}:missing"
    return f"{real}:{size}:{mtime_ns}"


def file_stamps(paths: Sequence[str]) -> str:
    """Each path's inode, size, mtime and ctime (``-`` when absent): a write, a replacement, a
    chmod or a new directory entry changes it."""
    stamps = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            stamps.append(f"{path}:-")
            continue
        stamps.append(f"{path}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}")
    return "\0".join(stamps)


class NotAPlainFile(OSError):
    """Not a regular file on a disk (a FIFO, a device, ``/proc``): an OSError, so readers treat it as
    unreadable instead of blocking on it or reading without end."""


# Kernel pseudo-filesystems hold no headers; their files can block, fail to read
# (/proc/self/pagemap) or be huge (/proc/kcore), though stat calls them regular.
PSEUDO_ROOTS = ("/proc/", "/sys/", "/dev/")
# No header is this large; a file that says it is (/proc/kcore) is not hashed.
HEADER_LIMIT = 1 << 28


def read_blocks(path: StrPath, *, limit: int | None = None) -> Iterator[bytes]:
    """A regular file's contents in blocks, in bounded work: the open never blocks; NotAPlainFile for
    anything but a regular file, one larger than ``limit`` or holding more than its size."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotAPlainFile(f"{os.fsdecode(path)} is not a regular file")
        if limit is not None and st.st_size > limit:
            raise NotAPlainFile(f"{os.fsdecode(path)} is larger than {limit} bytes")
        left = st.st_size
        while left > 0 and (block := os.read(fd, min(_BLOCK, left))):
            left -= len(block)
            yield block
        if os.read(fd, 1):  # more than its size: growing, or a pseudo file
            raise NotAPlainFile(f"{os.fsdecode(path)} holds more than its size says (being written?)")
    finally:
        os.close(fd)


def sha256_file(path: StrPath, *, limit: int | None = None) -> str:
    """The SHA-256 hex digest of a regular file's contents (see :func:`read_blocks`)."""
    import hashlib

    digest = hashlib.sha256()
    for block in read_blocks(path, limit=limit):
        digest.update(block)
    return digest.hexdigest()


def sha256_plain_file(path: StrPath, *, limit: int | None = None) -> str:
    """:func:`sha256_file`, refusing a kernel pseudo-file (NotAPlainFile) before it is opened."""
    real = os.path.realpath(path)
    if real.startswith(PSEUDO_ROOTS):
        raise NotAPlainFile(f"{os.fsdecode(path)} is a kernel pseudo-file ({real}), not a header")
    return sha256_file(real, limit=limit)
