"""An on-disk memo of toolchain probes (versions, wrapper targets, search answers): a cache hit must
run no subprocess. Keyed by the probed file's identity or the environment searched, so a change asks
again; failures are never remembered; in an untrusted or read-only cache root the probe runs."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from .. import config
from ..errors import CacheError
from ..fileio import atomic_write, file_stamps
from ..trust import check_root, private_file

T = TypeVar("T")

MEMO_NAME = "toolchain-memo.json"
MEMO_SCHEMA = 1


def _trusted(path: Path, *, create: bool, reading: bool = False) -> bool:
    try:
        return check_root(path.parent, create=create) and (not reading or private_file(path))
    except CacheError:
        return False


# The memo's text as last read, by the file's stamp (ctime: a chmod too): a load asks it several questions.
_last_read: tuple[tuple[str, int, int, int, int], str] | None = None


def _read(path: Path, *, again: bool = False) -> dict[str, Any]:
    global _last_read
    try:
        st = os.stat(path)
        stamp = (str(path), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if again or _last_read is None or _last_read[0] != stamp:
            _last_read = (stamp, path.read_text() if _trusted(path, create=False, reading=True) else "{}")
        data = json.loads(_last_read[1])
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("schema") == MEMO_SCHEMA else {}


def remembered(
    kind: str,
    identity: str,
    probe: Callable[[], T],
    *,
    decode: Callable[[Any], T] = lambda v: v,
    fresh: Callable[[T], bool] = lambda v: True,
    create: bool = True,
) -> T:
    """``probe()``'s result for ``(kind, identity)``, from the memo when present. A value that
    is not ``fresh`` (e.g. the file it names was replaced) is neither used nor remembered;
    without ``create`` it is remembered only in a cache root that exists already."""
    try:
        path = config.CACHE_DIR.get() / MEMO_NAME
    except config.ConfigError:  # the load reports the root it uses (a build_directory may stand in)
        return probe()
    key = f"{kind}|{identity}"
    entries = _read(path).get("entries", {})
    with contextlib.suppress(Exception):  # absent, or written by another version: asked again
        value = decode(entries[key])
        if fresh(value):
            return value
    value = probe()
    if not fresh(value):
        return value
    data = _read(path, again=True)  # re-read: another process may have added entries meanwhile
    data["schema"] = MEMO_SCHEMA
    data.setdefault("entries", {})[key] = value
    if _trusted(path, create=create):
        with contextlib.suppress(OSError):
            atomic_write(path, json.dumps(data).encode())  # readers never see half a file
    return value


def remembered_digest(kind: str, paths: Sequence[str], digest: Callable[[], str]) -> str:
    """``digest()`` of the files ``paths``, remembered by their stamps: a first cache hit stats
    the headers it keys instead of reading and hashing them."""
    return remembered(kind, file_stamps(paths), digest, create=False)
