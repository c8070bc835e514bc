"""A small on-disk memo of toolchain probes (versions, wrapper targets).

Probing a compiler runs it; doing that on every load would put subprocesses on
the cache-hit path. Results are keyed by the probed file's identity (real path,
size, mtime), so replacing the file invalidates its entry. Failures are never
remembered. The memo is a convenience: if its directory is not writable the
probe simply runs again next time.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .. import config
from ..fileio import atomic_write

T = TypeVar("T")

MEMO_NAME = "toolchain-memo.json"
MEMO_SCHEMA = 1


def _memo_path() -> Path:
    return config.CACHE_DIR.get() / MEMO_NAME


def _read(path: Path) -> dict[str, Any]:
    if not _trusted(path, create=False):
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("schema") != MEMO_SCHEMA:
        return {}
    return data


def _trusted(path: Path, *, create: bool) -> bool:
    """The memo is used only in a cache root that passes the cache's ownership checks."""
    from ..cache.trust import check_root, private_file
    from ..errors import CacheError

    try:
        return check_root(path.parent, create=create) and (create or private_file(path))
    except CacheError:
        return False


def _write(path: Path, data: dict[str, Any]) -> None:
    if not _trusted(path, create=True):
        return
    with contextlib.suppress(OSError):
        atomic_write(path, json.dumps(data).encode())  # readers never see half a file


def remembered(
    kind: str,
    identity: str,
    probe: Callable[[], T],
    *,
    encode: Callable[[T], Any] = lambda v: v,
    decode: Callable[[Any], T] = lambda v: v,
    fresh: Callable[[T], bool] = lambda v: True,
) -> T:
    """``probe()``'s result for ``(kind, identity)``, from the memo when present. A value that
    is not ``fresh`` (e.g. the file it names was replaced) is neither used nor remembered."""
    path = _memo_path()
    key = f"{kind}|{identity}"
    data = _read(path)
    if key in data.get("entries", {}):
        with contextlib.suppress(Exception):
            value = decode(data["entries"][key])
            if fresh(value):
                return value
    value = probe()
    if not fresh(value):
        return value
    data = _read(path)  # re-read: another process may have added entries meanwhile
    data["schema"] = MEMO_SCHEMA
    data.setdefault("entries", {})[key] = encode(value)
    _write(path, data)
    return value
