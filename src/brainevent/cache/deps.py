"""The files a build read, recorded with their contents' hashes and re-checked on every hit.

Each file is ``{path: [size, mtime_ns, sha256]}``; a hit hashes only a file whose stat differs
or whose time is too close to the build to trust, and a file that changed while the build ran
is recorded as unverified, so the next load rebuilds it. docs/caching.md has the rules.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable, Mapping, Sequence

from ..fileio import HEADER_LIMIT, PSEUDO_ROOTS, sha256_plain_file

# A recorded file modified less than this before the build started may share a clock
# tick with a later edit (coarse filesystem timestamps), so a hit re-hashes it.
RACY_WINDOW_NS = 2_000_000_000

# (size, mtime_ns, ctime_ns, inode): what a build compares. The mtime can be set to any
# value (`touch -d`, `cp -p`, an unpacked archive), so a file replaced during a build by
# one with an older mtime would look untouched; the inode and the change time, which the
# kernel sets to "now" on every write, rename and utime, cannot be set back.
Identity = tuple[int, int, int, int]
DependencyRecord = dict[str, list]  # path -> [size, mtime_ns, sha256 or None]


def identity_of(path: str) -> Identity | None:
    """:data:`Identity` of a regular file; None for anything else (a FIFO could block for ever)."""
    if path.startswith(PSEUDO_ROOTS):
        return None
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def snapshot(paths: Iterable[str]) -> dict[str, Identity]:
    """The identity of each existing file, by real path, taken before a build starts."""
    return {os.path.realpath(p): st for p in paths if (st := identity_of(p)) is not None}


def sha256_or_none(path: str) -> str | None:
    """The file's digest; None for what is not a plain file on a disk (bounded work always)."""
    try:
        return sha256_plain_file(path, limit=HEADER_LIMIT)
    except (OSError, ValueError):
        return None


# Digests this process computed, by path and identity: a file whose identity is unchanged has the
# same bytes (its change time cannot be set back), so a build that reads the same hundreds of
# headers as the last one (CCCL) hashes none of them. Only files older than the racy window.
_digests: dict[tuple[str, Identity], str] = {}


def _digest(path: str, identity: Identity) -> str | None:
    digest = _digests.get((path, identity))
    settled = max(identity[1:3]) < time.time_ns() - RACY_WINDOW_NS
    if digest is None and (digest := sha256_or_none(path)) and settled:
        _digests[(path, identity)] = digest
    return digest


def _real_path(path: str, real_dirs: dict[str, str]) -> str:
    """``path`` resolved; ``real_dirs`` memoises directories (hundreds of headers, a handful of dirs)."""
    head, tail = os.path.split(path)
    if head not in real_dirs:
        real_dirs[head] = os.path.realpath(head)
    candidate = os.path.join(real_dirs[head], tail)
    return os.path.realpath(candidate) if os.path.islink(candidate) else candidate


def record(
    paths: Iterable[str], *, before: Mapping[str, Identity], started_ns: int, skip_dirs: Sequence[str]
) -> DependencyRecord:
    """The record of ``paths`` as a build that started at ``started_ns`` read them.

    ``before`` holds stats taken before the build (our own include scan's guess): a file
    whose identity is unchanged since then was compiled as it is now, even if it is new.
    A file with no such stat is trusted only if it was last written (by its change time,
    which no one can set back, not only its mtime) before the build.
    """
    result: DependencyRecord = {}
    real_dirs: dict[str, str] = {}
    for path in paths:
        real = _real_path(path, real_dirs)
        if any(real == d or real.startswith(d + os.sep) for d in skip_dirs):
            continue
        first = identity_of(path)
        digest = _digest(path, first) if first is not None else None
        last = identity_of(path)
        if first is None or last != first or digest is None:
            result[path] = [-1, -1, None]  # vanished or being written: unverified
            continue
        unchanged_since_scan = before.get(real) == first
        old_enough = max(first[1], first[2]) < started_ns - RACY_WINDOW_NS
        result[path] = [first[0], first[1], digest if (unchanged_since_scan or old_enough) else None]
    return result


def first_stale(record_: Mapping[str, Sequence], recorded_ns: int) -> str | None:
    """None when every recorded file still has the recorded contents, else why not."""
    racy_after = recorded_ns - RACY_WINDOW_NS
    for path, (size, mtime_ns, digest) in record_.items():
        if digest is None:
            return f"{path} changed while the entry was being built"
        now = identity_of(path)
        if now is None:
            return f"{path} is missing or not a regular file"
        if now[0] != size:
            return f"{path} changed"
        if now[1] == mtime_ns and mtime_ns < racy_after:
            continue  # not written since it was recorded
        if sha256_or_none(path) != digest:
            return f"{path} changed (or is no longer a plain file)"
    return None
