"""NVRTC's automatic precompiled headers within this process: a kernel whose first includes and
options match an earlier one's starts from its saved state. A speed-up only: no key holds it.

NVRTC does not check that a PCH's headers are unchanged, so this module does: each PCH is kept with
the record of what its compile read (cache/deps.py) and removed once one of those files changed; a
compile that used a PCH read what its maker read. The newest few PCHs (hundreds of MB for CCCL) are
kept in a directory of this process's own, removed at exit."""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from typing import Any, NamedTuple

KEEP = 4  # PCHs kept on disk, newest first
# NVRTC's note on each PCH it made or used (--pch-messages, on by default): read, then dropped.
_NOTE = re.compile(r'^"[^"\n]*": (creating|using) precompiled header file "([^"\n]+)"\n?', re.M)


class _Made(NamedTuple):
    reads: tuple[str, ...]  # what the compile that made it read
    record: dict[str, list[Any]]  # their record, as cache/deps.py makes it
    since_ns: int


_made: dict[str, _Made] = {}
_directory: dict[int, str] = {}  # by process id: a forked child makes its own
_lock = threading.Lock()  # one compile with PCHs at a time: pruning never meets a PCH being made


@contextlib.contextmanager
def session(wanted: bool) -> Iterator[list[str]]:
    """The options that let one compile use and make PCHs (none when not ``wanted``: a source
    that includes nothing), stale and surplus PCHs removed first; held for the compile."""
    if not wanted:
        yield []
        return
    with _lock:
        if (directory := _directory.get(os.getpid())) is None:
            _made.clear()
            directory = _directory[os.getpid()] = tempfile.mkdtemp(prefix="brainevent-nvrtc-pch-")
            atexit.register(_remove, directory, os.getpid())
        _prune(directory)
        yield ["-pch", f"--pch-dir={directory}", "--pch-verbose=false"]


def _remove(directory: str, owner: int) -> None:
    if os.getpid() == owner:  # not a forked child's exit
        shutil.rmtree(directory, ignore_errors=True)


def _prune(directory: str) -> None:
    from ..cache.deps import first_stale

    with os.scandir(directory) as found:
        files = sorted(found, key=lambda e: e.stat().st_mtime_ns, reverse=True)
    for rank, entry in enumerate(files):
        made = _made.get(entry.path)
        if made is None or rank >= KEEP or first_stale(made.record, made.since_ns):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
            _made.pop(entry.path, None)


def account(log: str, read: list[str] | None, started_ns: int) -> tuple[str, list[str] | None]:
    """``(log, read)`` of a compile that ran in a :func:`session`: NVRTC's PCH notes taken out of
    the log; a PCH it made remembered with ``read``; what a PCH it used holds added to ``read``
    (None, unknown, for a PCH whose making this process did not see)."""
    from ..cache.deps import record

    for what, path in _NOTE.findall(log):
        if what == "creating" and read is not None:
            done = record(read, before={}, started_ns=started_ns, skip_dirs=())
            _made[path] = _Made(tuple(read), done, started_ns)
        elif what == "using":
            made = _made.get(path)
            # Its trace names no header the PCH holds (not even NVRTC's built-in one: None).
            read = None if made is None else list(dict.fromkeys([*(read or ()), *made.reads]))
    return _NOTE.sub("", log), read
