"""Content-addressed store of compiled modules: key schema, locks, atomic publish, manifests.

No submodule is imported here, so that importing one does not import the rest: this file
holds what every part of the cache reads (where the cache is, its layout's names).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TypeGuard

from .. import config

LAYOUT_VERSION = "v1"  # the layout under the root: see store.py
MANIFEST_NAME = "manifest.json"  # in each entry (cache/manifest.py)


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
    used last): the files in it keep their stamps."""
    with contextlib.suppress(OSError):  # a read-only cache still serves hits
        os.utime(entry)
