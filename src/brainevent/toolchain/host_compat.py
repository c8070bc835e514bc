"""Which host C++ compilers an nvcc accepts, checked before nvcc gets to complain.

nvcc's ``crt/host_config.h`` stops the build with an ``#error`` when the host compiler
is newer than that CUDA release supports. We check the same rule up front so the error
names the compiler, its version, the limit and the two ways out.
"""

from __future__ import annotations

import functools
import glob
import logging
import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Literal

from .. import config
from ..errors import HostCompilerIncompatibleError, HostCompilerNotFoundError, ToolchainError
from ..fileio import size_and_mtime
from .memo import remembered
from .nvcc import NvccInfo

logger = logging.getLogger(__name__)

CompilerKind = Literal["gcc", "clang"]
_PROBE_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class HostLimit:
    """For nvcc releases ``first`` to ``last`` (inclusive): the newest majors accepted."""

    first: tuple[int, int]
    last: tuple[int, int]
    gcc_max: int
    clang_max: int


# From each release's crt/host_config.h; 13.0 and 13.5 were read on this project's
# machines. Releases outside every row (11.x, 13.1-13.4, 13.6+) are read from the
# toolkit's own header instead of being guessed.
HOST_LIMITS: tuple[HostLimit, ...] = (
    HostLimit((12, 0), (12, 0), gcc_max=12, clang_max=14),
    HostLimit((12, 1), (12, 1), gcc_max=12, clang_max=15),
    HostLimit((12, 2), (12, 3), gcc_max=12, clang_max=16),
    HostLimit((12, 4), (12, 5), gcc_max=13, clang_max=17),
    HostLimit((12, 6), (12, 6), gcc_max=13, clang_max=18),
    HostLimit((12, 8), (12, 9), gcc_max=14, clang_max=19),
    HostLimit((13, 0), (13, 0), gcc_max=15, clang_max=20),
    HostLimit((13, 5), (13, 5), gcc_max=16, clang_max=21),
)


def host_limit_for(nvcc_version: tuple[int, int]) -> HostLimit | None:
    """The table row covering an nvcc version, or None when the table does not know it."""
    version = (nvcc_version[0], nvcc_version[1])
    for row in HOST_LIMITS:
        if row.first <= version <= row.last:
            return row
    return None


def _header_int(text: str, marker: str) -> int | None:
    # The number right after a fixed marker such as "#if __GNUC__ > ".
    _, sep, rest = text.partition(marker)
    digits = ""
    for ch in rest:
        if not ch.isdigit():
            break
        digits += ch
    return int(digits) if sep and digits else None


def host_limit_from_header(root: str) -> HostLimit | None:
    """Read the limits out of a toolkit's own ``crt/host_config.h``."""
    patterns = (
        os.path.join(root, "targets", "*", "include", "crt", "host_config.h"),
        os.path.join(root, "include", "crt", "host_config.h"),
    )
    for pattern in patterns:
        for header in sorted(glob.glob(pattern)):
            try:
                with open(header, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
            except OSError:
                continue
            gcc_over = _header_int(text, "#if __GNUC__ > ")
            clang_at = _header_int(text, "(__clang_major__ >= ")
            if gcc_over is not None and clang_at is not None:
                return HostLimit((0, 0), (0, 0), gcc_max=gcc_over, clang_max=clang_at - 1)
    return None


def _limit(nvcc: NvccInfo) -> HostLimit | None:
    row = host_limit_for(nvcc.version)
    if row is None:
        row = host_limit_from_header(nvcc.root)
        logger.debug("host compiler limits of nvcc %s from its header: %s", nvcc.version, row)
    return row


# --------------------------------------------------------------- the host compiler


def _identity(path: str) -> tuple[str, int, int]:
    return (path, *size_and_mtime(path))


@functools.lru_cache(maxsize=32)
def _macro_version(identity: tuple[str, int, int]) -> tuple[CompilerKind, int]:
    path = identity[0]
    # The predefined macros are exactly what host_config.h tests, and one run of the
    # preprocessor on an empty file tells gcc from clang (clang also defines __GNUC__).
    cmd = [path, "-E", "-dM", "-x", "c++", os.devnull]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HostCompilerNotFoundError(
            f"cannot run the host compiler {path}: {exc}", compiler=path, command=cmd
        ) from None
    macros: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) == 3 and parts[0] == "#define":
            macros[parts[1]] = parts[2]
    for kind, key in (("clang", "__clang_major__"), ("gcc", "__GNUC__")):
        value = macros.get(key, "")
        if value.isdigit():
            return kind, int(value)  # type: ignore[return-value]
    raise ToolchainError(
        f"cannot tell the version of the host compiler {path}: `{' '.join(cmd)}` "
        f"(exit {proc.returncode}) defined neither __clang_major__ nor __GNUC__. "
        "nvcc on Linux needs gcc or clang: point CXX or BRAINEVENT_CXX at one.",
        compiler=path,
        command=cmd,
    )


def _resolve(cxx_path: str) -> str:
    found = cxx_path if os.sep in cxx_path else shutil.which(cxx_path)
    if not found or not os.path.isfile(found):
        raise HostCompilerNotFoundError(
            f"host compiler {cxx_path!r} was not found. Point CXX or BRAINEVENT_CXX at a g++ or clang++.",
            compiler=cxx_path,
        )
    return os.path.realpath(found)


def host_compiler_version(path: str) -> tuple[CompilerKind, int]:
    """('gcc' | 'clang', major) of a host compiler; runs it once per binary identity."""
    identity = _identity(_resolve(path))
    kind, major = remembered(
        "host-compiler",
        ":".join(map(str, identity)),
        lambda: _macro_version(identity),
        encode=list,
        decode=lambda v: (str(v[0]), int(v[1])),
    )
    return kind, major  # type: ignore[return-value]


def clear_cache() -> None:
    _macro_version.cache_clear()


def check_host_compiler(
    nvcc: NvccInfo,
    cxx_path: str,
    allow_unsupported: bool | None = None,
) -> list[str]:
    """Extra nvcc flags for this host compiler, or a :class:`ToolchainError`.

    Returns ``[]`` when nvcc supports the compiler, ``["-allow-unsupported-compiler"]``
    when it does not but the caller (or ``BRAINEVENT_ALLOW_UNSUPPORTED_COMPILER``) opts in.
    """
    kind, major = host_compiler_version(cxx_path)
    limit = _limit(nvcc)
    if limit is None:
        logger.debug("no host compiler limits known for nvcc %s", nvcc.version_string)
        return []
    newest = limit.gcc_max if kind == "gcc" else limit.clang_max
    if major <= newest:
        return []
    if config.ALLOW_UNSUPPORTED_COMPILER.get() if allow_unsupported is None else allow_unsupported:
        logger.warning(
            "host compiler %s is %s %d, newer than nvcc %s supports (%s <= %d); "
            "passing -allow-unsupported-compiler",
            cxx_path,
            kind,
            major,
            nvcc.version_string,
            kind,
            newest,
        )
        return ["-allow-unsupported-compiler"]
    example = f"{'g++' if kind == 'gcc' else 'clang++'}-{newest}"
    raise HostCompilerIncompatibleError(
        f"host compiler {cxx_path} is {kind} {major}, but nvcc {nvcc.version_string} "
        f"({nvcc.path}) accepts {kind} <= {newest}. Fix: point CXX or {config.CXX.name} "
        f"at an older compiler (e.g. {config.CXX.name}={example}), or opt in with "
        f"{config.ALLOW_UNSUPPORTED_COMPILER.name}=1 (passes -allow-unsupported-compiler; "
        "the build may then fail or misbehave).",
        compiler=cxx_path,
        kind=kind,
        version=major,
        max_supported=newest,
        nvcc_version=nvcc.version,
    )
