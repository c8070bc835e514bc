"""What one nvcc binary is: its identity, its version and, behind wrapper scripts, the real
toolkit it belongs to.

Only the version check runs a subprocess (``nvcc --version``, memoized per binary in the
process and on disk); :func:`nvcc_identity` gives a cache-key identity from ``stat`` alone.
"""

from __future__ import annotations

import functools
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from ..errors import NvccNotFoundError
from ..fileio import file_identity
from .memo import remembered

_EXE = "nvcc.exe" if sys.platform == "win32" else "nvcc"
_VERSION_TIMEOUT_S = 30.0


# --------------------------------------------------------------------- result types


class Candidate(NamedTuple):
    """One place considered: the path, how it was found, and what we made of it."""

    path: str
    found_via: str
    note: str = ""


@dataclass(frozen=True)
class NvccInfo:
    """A usable nvcc."""

    path: str  # the real binary, symlinks and wrapper scripts resolved
    root: str  # the toolkit root (parent of bin/)
    version: tuple[int, int]
    found_via: str
    candidates: tuple[Candidate, ...] = field(default=(), compare=False)

    @property
    def version_string(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"


# -------------------------------------------------------------- identity and version


def nvcc_identity(path: str | os.PathLike[str]) -> str:
    """A cheap identity for cache keys: real path, size and mtime; no subprocess."""
    return file_identity(path, missing_ok=False)


def parse_nvcc_version(text: str) -> tuple[int, int] | None:
    """(major, minor) from ``nvcc --version`` output ("... release 13.0, V13.0.88")."""
    for line in text.splitlines():
        _, sep, rest = line.partition("release ")
        if not sep:
            continue
        number = rest.split(",", 1)[0].strip()
        major, _, minor = number.partition(".")
        if major.isdigit() and minor.isdigit():
            return (int(major), int(minor))
    return None


class _Unusable(Exception):
    """Internal: a candidate was looked at and rejected; the message says why."""


def _run(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            list(args),
            capture_output=True,
            text=True,
            timeout=_VERSION_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise _Unusable(f"`{' '.join(args)}` did not answer in {_VERSION_TIMEOUT_S:.0f}s") from None
    except OSError as exc:
        raise _Unusable(f"cannot run it: {exc}") from None


# Memoized on (real path, size, mtime_ns): a rebuilt or upgraded nvcc is asked again.
@functools.lru_cache(maxsize=64)
def _version_of(identity: str, real: str) -> tuple[int, int]:
    return remembered(
        "nvcc-version",
        identity,
        lambda: _probe_version(real),
        encode=list,
        decode=lambda v: (int(v[0]), int(v[1])),
    )


def _probe_version(real: str) -> tuple[int, int]:
    proc = _run([real, "--version"])
    version = parse_nvcc_version(proc.stdout)
    if proc.returncode != 0 or version is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise _Unusable(f"`nvcc --version` failed (exit {proc.returncode}): {tail[0]}")
    return version


def nvcc_version(path: str | os.PathLike[str]) -> tuple[int, int]:
    """The (major, minor) release of an nvcc binary; runs it once per identity."""
    real = os.path.realpath(path)
    try:
        return _version_of(nvcc_identity(real), real)
    except (_Unusable, OSError) as exc:
        raise NvccNotFoundError(f"nvcc at {real} is unusable: {exc}", path=real) from None


# ---------------------------------------------------------- turning a path into info


def _is_script(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == b"#!"
    except OSError:
        return False


def _real_nvcc_in(directory: str) -> str | None:
    real = os.path.realpath(os.path.join(directory, _EXE))
    return real if os.path.isfile(real) and not _is_script(real) else None


def _target_from_dryrun(script: str) -> str | None:
    # A dry run makes the real nvcc print its own directory as `#$ _HERE_=...` without
    # compiling anything. It does query the host compiler, so it fails without one.
    try:
        proc = _run([script, "-dryrun", "-c", "-x", "cu", os.devnull, "-o", os.devnull])
    except _Unusable:
        return None
    for line in (proc.stderr + proc.stdout).splitlines():
        if line.startswith("#$ _HERE_="):
            return _real_nvcc_in(line.split("=", 1)[1].strip())
    return None


def _target_from_text(script: str) -> str | None:
    # Fallback for wrappers like `exec /usr/local/cuda-13.0/bin/nvcc "$@"`: the first
    # absolute path to a real nvcc binary named in the script.
    try:
        with open(script, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()[1:]  # skip the #! line
    except OSError:
        return None
    for line in lines:
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        for word in words:
            if os.path.isabs(word) and os.path.basename(word) == _EXE:
                real = _real_nvcc_in(os.path.dirname(word))
                if real:
                    return real
    return None


@functools.lru_cache(maxsize=64)
def _wrapper_target(identity: str, script: str) -> str:
    # A wrapper (e.g. /usr/local/bin/nvcc) hides the toolkit root; find the binary it runs.
    return remembered("nvcc-wrapper", identity, lambda: _probe_wrapper(script))


def _probe_wrapper(script: str) -> str:
    real = _target_from_dryrun(script) or _target_from_text(script)
    if real is None:
        raise _Unusable(
            "it is a wrapper script, and neither `nvcc -dryrun` nor its text revealed the real nvcc"
        )
    return real


def _inspect(candidate: Candidate) -> NvccInfo:
    """Validate one candidate; raises _Unusable with the reason it cannot be used."""
    path = candidate.path
    if not os.path.exists(path):
        raise _Unusable("no such file")
    if os.path.isdir(path):
        raise _Unusable("is a directory")
    if not os.access(path, os.X_OK):
        raise _Unusable("not executable")
    real = os.path.realpath(path)
    try:
        if _is_script(real):
            real = _wrapper_target(nvcc_identity(real), real)
        version = _version_of(nvcc_identity(real), real)
    except OSError as exc:  # vanished or unreadable between the checks and the stat
        raise _Unusable(str(exc)) from None
    root = str(Path(real).parent.parent)
    return NvccInfo(real, root, version, candidate.found_via)
