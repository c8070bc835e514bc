"""Who may have written what the cache reads, links and loads.

Another local user must never get their code run, or a file of theirs written, by our process;
this user can change anything the process loads anyway. The rules (directories from ``/`` to
the root, what we create and read inside it): docs/caching.md, "Who can change the cache".
Each refusal is a :class:`CacheError` naming the path and the fix.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

from .errors import CacheError
from .fileio import make_dir

_FIX = (
    "Point BRAINEVENT_CACHE_DIR (or build_directory=) at a directory only you can write, "
    "such as the default ~/.cache/brainevent."
)

_lock = threading.Lock()
# Roots whose ancestors were checked in this process (a few stats each, once). The root
# and everything below it are checked on every use: one lstat each.
_checked_ancestors: set[str] = set()


def _refuse(path: Path | str, why: str, fix: str = _FIX) -> CacheError:
    return CacheError(f"refused: {path} {why}. {fix}", path=str(path))


def entry_fix(module: str) -> str:
    return (
        f"Remove the entry (`brainevent cache clear {module}`) or point BRAINEVENT_CACHE_DIR at a "
        "directory only you can write."
    )


def _foreign_owner(st: os.stat_result, *, allow_root: bool) -> bool:
    return st.st_uid != os.getuid() and not (allow_root and st.st_uid == 0)


def _not_ours(path: Path | str, st: os.stat_result, fix: str = _FIX) -> CacheError:
    return _refuse(path, f"is owned by uid {st.st_uid}, not by this user (uid {os.getuid()})", fix)


def _others_can_rename_in(st: os.stat_result) -> bool:
    """Writable by group or others, and no sticky bit keeps them off our entries."""
    return bool(st.st_mode & 0o022) and not st.st_mode & stat.S_ISVTX


def _examine(path: Path | str, *, follow: bool = False, fix: str = _FIX) -> os.stat_result | None:
    """``stat`` (``lstat`` unless ``follow``) of ``path``; None when absent, refused when unreadable."""
    try:
        return os.stat(path) if follow else os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _refuse(path, f"cannot be examined ({exc.strerror})", fix) from None


def _parents(path: str) -> list[str]:
    """The directories above ``path`` (absolute), from ``/`` down: strings, as pathlib's
    ``parents`` cost a first hit more than the stats."""
    found = []
    while (parent := os.path.dirname(path)) != path:
        found.append(parent)
        path = parent
    return found[::-1]


def _check_ancestors(root: str, fix: str = _FIX) -> bool:
    """No other user may rename the root away; False when some do not exist yet."""
    for parent in _parents(root):
        st = _examine(parent, follow=True, fix=fix)
        if st is None:
            return False
        if _foreign_owner(st, allow_root=True):
            raise _refuse(
                parent, f"lies above {root} and is owned by uid {st.st_uid}, neither you nor root", fix
            )
        if _others_can_rename_in(st):
            raise _refuse(
                parent,
                f"lies above {root} and is writable by other users without the sticky bit "
                f"(mode {stat.S_IMODE(st.st_mode):o}), so they could replace {root}",
                f"Run `chmod go-w {parent}`, or choose another directory.",
            )
    return True


def private_dir(path: Path, *, create: bool, fix: str = _FIX, tighten: bool = True) -> bool:
    """Checks (or creates, mode 0700) one of our directories, tightening one too open unless
    ``tighten`` is off (then one that others can write is refused); False if absent and not
    created. A link, another owner or a non-directory is refused."""
    st = _examine(path, fix=fix)
    if st is None:
        if not create:
            return False
        try:
            make_dir(path)  # 0700, whatever the umask
        except (FileExistsError, NotADirectoryError):
            pass  # another process made something there meanwhile: checked below like any other
        except OSError as exc:
            message = f"cannot create cache directory {path}: {exc.strerror}. {fix}"
            raise CacheError(message, path=str(path)) from exc
        st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise _refuse(path, "is a symbolic link, which the cache never creates", fix)
    if not stat.S_ISDIR(st.st_mode):
        raise _refuse(path, "is not a directory", fix)
    if _foreign_owner(st, allow_root=False):
        raise _not_ours(path, st, fix)
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022 and not tighten:
        raise _refuse(path, f"is writable by other users (mode {mode:o})", fix)
    if mode & 0o077 and tighten:
        # Group or others may enter: take their bits away, keep ours (a read-only cache
        # stays read-only). No link is followed: lstat said it is a directory we own.
        try:
            os.chmod(path, mode & 0o700)
        except OSError as exc:
            # Readable by others on a read-only filesystem: not private, but nobody else can
            # change it either. Writable by others: refused.
            if mode & 0o022:
                raise _refuse(path, f"is mode {mode:o} and cannot be made private", fix) from exc
    return True


def check_root(root: Path, *, create: bool, fix: str = _FIX) -> bool:
    """The cache root (or another directory whose files this process runs: a CMake package)
    and everything above it; False if it does not exist and ``create`` is off."""
    key = os.path.abspath(root)
    if key not in _checked_ancestors:
        if _check_ancestors(key, fix):
            with _lock:
                _checked_ancestors.add(key)
        elif not create:
            return False  # no cache there yet
        else:
            for parent in _parents(key):  # the missing levels are ours: made 0700
                if not os.path.exists(parent):
                    private_dir(Path(parent), create=True, fix=fix)
    st = _examine(key, fix=fix)
    if st is None:
        if not create:
            return False
        private_dir(Path(key), create=True, fix=fix)
        st = os.lstat(key)
    if stat.S_ISLNK(st.st_mode):
        # A link the user set up themselves is fine if what it points to passes the checks.
        real = os.path.realpath(key)
        _check_ancestors(real, fix)
        st = os.stat(real)
    if not stat.S_ISDIR(st.st_mode):
        raise CacheError(f"cannot create cache directory {key}: a file has that name. {fix}", path=key)
    if _foreign_owner(st, allow_root=False):
        raise _not_ours(key, st, fix)
    if _others_can_rename_in(st):
        raise _refuse(
            key,
            f"is writable by other users without the sticky bit (mode {stat.S_IMODE(st.st_mode):o})",
            f"Run `chmod 700 {key}`, or choose another directory.",
        )
    return True


def private_file(path: Path, fix: str = _FIX) -> bool:
    """True if ``path`` is a regular file of ours that others cannot write; False if absent."""
    st = _examine(path)
    if st is None:
        return False
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, "is not a regular file (a symbolic link or a special file)", fix)
    if _foreign_owner(st, allow_root=False):
        raise _not_ours(path, st, fix)
    if st.st_mode & 0o022:
        raise _refuse(path, f"is writable by other users (mode {stat.S_IMODE(st.st_mode):o})", fix)
    return True


def harden_tree(directory: Path, executable: str | None = None) -> None:
    """Directories 0700, files 0600 (``executable`` 0700) under ``directory``, whatever the umask."""
    os.chmod(directory, 0o700)
    for here, dirs, files in os.walk(directory):
        for name in dirs:
            os.chmod(os.path.join(here, name), 0o700, follow_symlinks=False)
        for name in files:
            full = os.path.join(here, name)
            if os.path.islink(full):
                continue
            os.chmod(full, 0o700 if name == executable else 0o600)


def forget() -> None:
    """Forget which roots' ancestors were checked (tests that change owners and modes)."""
    with _lock:
        _checked_ancestors.clear()
