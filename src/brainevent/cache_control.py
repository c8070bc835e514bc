"""Choosing and emptying the kernel cache from Python (brainevent 0.2.1's names; ``brainevent
cache`` is the CLI twin)."""

from __future__ import annotations

import logging
import os

from . import config
from .cache import inside_name
from .errors import SpecError
from .trust import check_root

log = logging.getLogger("brainevent")


def set_cache_dir(path: str | os.PathLike[str]) -> None:
    """Use ``path`` as the kernel cache for the rest of this process (created if missing).

    It wins over ``BRAINEVENT_CACHE_DIR``; modules already loaded stay where they are, and
    nothing is moved. A ``build_directory=`` given to a loader still wins for that call.
    """
    raw = os.fspath(path) if isinstance(path, str | os.PathLike) else None
    if not isinstance(raw, str) or not raw.strip():
        raise SpecError(
            f"set_cache_dir() needs a directory path (str or os.PathLike, e.g. '~/.cache/brainevent'), "
            f"got {type(path).__name__} {path!r}",
            value=repr(path),
        )
    directory = config.CACHE_DIR.checked(raw, "set_cache_dir(path)")
    # Created (missing levels 0700) and checked as every load checks the root: CacheError if
    # it cannot be made, or another user could change it.
    check_root(directory, create=True, fix="Pass a directory only this user can write.")
    config.set_override(config.CACHE_DIR, str(directory))
    log.debug("kernel cache set to %s", directory)


def get_cache_dir() -> str:
    """The kernel cache directory in use: ``set_cache_dir``'s, else ``BRAINEVENT_CACHE_DIR``,
    else ``$XDG_CACHE_HOME/brainevent`` (``~/.cache/brainevent``)."""
    return str(config.CACHE_DIR.get())


def clear_cache(name: str | None = None) -> int:
    """Remove the cached builds of module ``name`` (of every module when None); returns how
    many were removed.

    Safe while other processes use the cache: an entry being built is skipped (and logged),
    and a process that already loaded a module keeps running it.
    """
    from .cache.admin import clear

    # A module's entries live in one folder named after it: anything else could reach outside the cache.
    if name is not None and not inside_name(name):
        raise SpecError(
            f"clear_cache(name={name!r}): expected the name of a loaded module (e.g. 'my_kernels'), "
            "or None to clear every module",
            value=repr(name),
        )
    removed, skipped = clear(config.CACHE_DIR.get(), name)
    if skipped:
        log.warning("clear_cache: %d entries being built were left in place", skipped)
    return removed
