"""What the host C++ compiler says about itself (version and built-in include directories, from one
preprocessor run), and which host compilers an nvcc accepts: the rule of its ``crt/host_config.h``,
checked up front so that the error names the compiler, its version, the limit and the ways out."""

from __future__ import annotations

import functools
import glob
import logging
import os
import re
import shutil
import subprocess
from typing import TYPE_CHECKING, Literal, NamedTuple

from .. import config
from ..errors import HostCompilerIncompatibleError, HostCompilerNotFoundError, ToolchainError
from ..fileio import file_identity
from .memo import remembered

if TYPE_CHECKING:
    from .host import HostCompiler
    from .nvcc import NvccInfo

logger = logging.getLogger(__name__)

CompilerKind = Literal["gcc", "clang"]
_PROBE_TIMEOUT_S = 60.0


class HostLimit(NamedTuple):
    """For nvcc releases ``first`` to ``last`` (inclusive): the newest majors accepted."""

    first: tuple[int, int]
    last: tuple[int, int]
    gcc_max: int
    clang_max: int


# From each release's crt/host_config.h. Releases outside every row (11.x, 13.1-13.4, 13.6+)
# are read from the toolkit's own header instead of being guessed.
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
    return next((row for row in HOST_LIMITS if row.first <= tuple(nvcc_version[:2]) <= row.last), None)


def host_limit_from_header(root: str) -> HostLimit | None:
    """Read the limits out of a toolkit's own ``crt/host_config.h``."""
    crt = os.path.join("include", "crt", "host_config.h")
    for header in [*sorted(glob.glob(os.path.join(root, "targets", "*", crt))), os.path.join(root, crt)]:
        try:
            with open(header, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        gcc_over = re.search(r"#if __GNUC__ > (\d+)", text)
        clang_at = re.search(r"\(__clang_major__ >= (\d+)", text)
        if gcc_over and clang_at:
            return HostLimit((0, 0), (0, 0), gcc_max=int(gcc_over[1]), clang_max=int(clang_at[1]) - 1)
    return None


# Headers under these are the machine's own installs, not part of the compiler: they are
# recorded and checked like the user's, although the compiler searches them by default.
_NOT_TOOLCHAIN_DIRS = ("/usr/local/include",)
# (kind or "" when neither gcc nor clang, major, built-in include directories)
_Facts = tuple[str, int, tuple[str, ...]]


def _probe(command: tuple[str, ...]) -> _Facts:
    # One preprocessor run tells both: the predefined macros on stdout (what host_config.h
    # tests; clang also defines __GNUC__), the include search list on stderr.
    cmd = [*command, "-E", "-dM", "-v", "-x", "c++", os.devnull]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise HostCompilerNotFoundError(
            f"cannot run the host compiler {command[0]}: {exc}", compiler=command[0], command=cmd
        ) from None
    kind, major = "", 0
    for name, macro in (("clang", "__clang_major__"), ("gcc", "__GNUC__")):
        if defined := re.search(rf"^#define {macro} (\d+)$", proc.stdout, re.MULTILINE):
            kind, major = name, int(defined[1])
            break
    listing = proc.stderr.partition("#include <...> search starts here:")[2]
    paths = [
        os.path.realpath(line.strip().removesuffix(" (framework directory)"))
        for line in listing.partition("End of search list")[0].splitlines()
        if line.startswith(" ")
    ]
    return kind, major, tuple(path for path in paths if path not in _NOT_TOOLCHAIN_DIRS)


# Per command and compiler identity (real path, size, mtime): a changed binary is asked again.
@functools.lru_cache(maxsize=32)
def _facts(command: tuple[str, ...], identity: str) -> _Facts:
    return remembered(
        "host-cxx",
        f"{' '.join(command)}|{identity}",
        lambda: _probe(command),
        decode=lambda v: (str(v[0]), int(v[1]), tuple(v[2])),
        fresh=lambda v: bool(v[0] or v[2]),  # a probe that learnt nothing is asked again
    )


def host_compiler_version(path: str) -> tuple[CompilerKind, int]:
    """('gcc' | 'clang', major) of a host compiler; runs it once per binary identity."""
    found = path if os.sep in path else shutil.which(path)
    if not found or not os.path.isfile(found):
        raise HostCompilerNotFoundError(
            f"host compiler {path!r} was not found. Point CXX or BRAINEVENT_CXX at a g++ or clang++.",
            compiler=path,
        )
    real = os.path.realpath(found)
    kind, major, _ = _facts((real,), file_identity(real))
    if not kind:
        raise ToolchainError(
            f"cannot tell the version of the host compiler {real}: `{real} -E -dM -x c++ {os.devnull}` "
            "defined neither __clang_major__ nor __GNUC__. "
            "nvcc on Linux needs gcc or clang: point CXX or BRAINEVENT_CXX at one.",
            compiler=real,
        )
    return kind, major  # type: ignore[return-value]


def system_include_dirs(compiler: HostCompiler) -> tuple[str, ...]:
    """The compiler's built-in header directories (real paths), which the key's compiler
    identity covers; asked in the same run as its version, only for a build."""
    try:
        return _facts((os.path.realpath(compiler.path), *compiler.extra_flags), compiler.identity)[2]
    except ToolchainError:
        return ()


clear_cache = _facts.cache_clear


def check_host_compiler(nvcc: NvccInfo, cxx_path: str, allow_unsupported: bool | None = None) -> list[str]:
    """Extra nvcc flags for this host compiler: ``[]`` when nvcc supports it, else a ToolchainError, or
    ``["-allow-unsupported-compiler"]`` when the caller (or BRAINEVENT_ALLOW_UNSUPPORTED_COMPILER) opts in."""
    kind, major = host_compiler_version(cxx_path)
    limit = host_limit_for(nvcc.version) or host_limit_from_header(nvcc.root)
    if limit is None:
        logger.debug("no host compiler limits known for nvcc %s", nvcc.version_string)
        return []
    newest = limit.gcc_max if kind == "gcc" else limit.clang_max
    if major <= newest:
        return []
    if config.ALLOW_UNSUPPORTED_COMPILER.get() if allow_unsupported is None else allow_unsupported:
        logger.warning(
            f"host compiler {cxx_path} is {kind} {major}, newer than nvcc {nvcc.version_string} "
            f"supports ({kind} <= {newest}); passing -allow-unsupported-compiler"
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
