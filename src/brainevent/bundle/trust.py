"""Who may have written a bundle the loader is about to run (the rule and its table: docs/caching.md).

A bundle is code this process will load, so it meets the cache's trust rule; the owners trusted
are root, this user and the owner of the sources' directory (who already controls the Python code
that asks for the bundle). A bundle that fails is refused with a CacheError naming the path and the fix.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..cache.manifest import MANIFEST_NAME
from ..errors import CacheError


def _refuse(path: Path, why: str) -> CacheError:
    return CacheError(
        f"refusing to load the bundled module at {path}: it {why}. If you built it, run `chmod go-w "
        f"{path}` (or build it again with `brainevent build --into`, which writes safe modes); otherwise "
        "remove the package's _brainevent directory, and the module is compiled from its sources.",
        path=str(path),
    )


def _owners(directory: Path) -> set[int]:
    try:
        source_owner = os.stat(directory).st_uid
    except OSError:
        source_owner = os.getuid()
    return {0, os.getuid(), source_owner}


def _check(path: Path, st: os.stat_result, owners: set[int], *, allow_sticky: bool) -> None:
    if st.st_uid not in owners:
        raise _refuse(path, f"is owned by uid {st.st_uid}, neither you, root, nor the owner of the sources")
    open_to_others = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if open_to_others and not (allow_sticky and st.st_mode & stat.S_ISVTX):
        raise _refuse(path, f"is writable by other users (mode {stat.S_IMODE(st.st_mode):o})")


def check_bundle(directory: Path, bundle: Path) -> None:
    """The directories from ``/`` to ``bundle`` (a directory under ``directory``/_brainevent)
    and its manifest; raises CacheError on anything another user could have written."""
    owners = _owners(directory)
    real = Path(os.path.realpath(directory))
    for parent in [*reversed(real.parents), real]:
        _check(parent, os.stat(parent), owners, allow_sticky=True)
    for inner in (directory / bundle.parent.name, bundle):
        st = os.lstat(inner)
        if not stat.S_ISDIR(st.st_mode):
            raise _refuse(inner, "is not a directory (a symbolic link?)")
        _check(inner, st, owners, allow_sticky=False)
    check_bundle_file(directory, bundle / MANIFEST_NAME)


def check_bundle_file(directory: Path, path: Path) -> None:
    """One file of a bundle: a regular file (not a link) nobody else could have written."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return  # absent: the caller reports the bundle as unusable
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, "is not a regular file (a symbolic link or a special file)")
    _check(path, st, _owners(directory), allow_sticky=False)
