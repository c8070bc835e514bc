"""The host C++ compiler: ``BRAINEVENT_CXX``, then ``CXX``, then conda's, then PATH. Finding it runs
no subprocess: the key holds the compiler's file identity, so a cache hit never asks for a version."""

# Not `from __future__ import annotations`: a NamedTuple compiles string annotations (docs/architecture.md).
import os
import shutil
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from .. import config
from ..environment import keyed_environment, variable
from ..errors import HostCompilerNotFoundError
from ..fileio import file_identity
from ..headers import c_api_digest, c_api_header
from .memo import remembered_digest

_PATH_NAMES = ("g++", "c++", "clang++")
_CONDA_NAMES = ("x86_64-conda-linux-gnu-c++", "aarch64-conda-linux-gnu-c++", "g++", "c++")


class HostCompiler(NamedTuple):
    """The host C++ compiler as found."""

    path: str  # the executable as found
    found_via: str
    wrapper: tuple[str, ...] = ()  # e.g. ("ccache",)
    extra_flags: tuple[str, ...] = ()  # flags written after the compiler in CXX
    searched: tuple[str, ...] = ()  # where the search looked

    @property
    def command(self) -> list[str]:
        return [*self.wrapper, self.path, *self.extra_flags]

    @property
    def identity(self) -> str:
        return file_identity(self.path)


def _from_command(raw: str, found_via: str, searched: list[str]) -> HostCompiler:
    import shlex  # only for a compiler named in the environment

    words = shlex.split(raw)
    if not words:
        raise HostCompilerNotFoundError(f"{found_via} is empty; set it to a C++ compiler such as g++.")
    # "ccache g++" keeps ccache as a wrapper; "g++ -m64" keeps flags after the compiler.
    exe_index = 1 if Path(words[0]).name in ("ccache", "sccache") and len(words) > 1 else 0
    resolved = shutil.which(words[exe_index])
    if resolved is None:
        raise HostCompilerNotFoundError(
            f"{found_via}={raw!r} does not name an executable C++ compiler. "
            "Point it at a compiler on PATH (for example g++) or an absolute path.",
            value=raw,
            searched=tuple(searched),
        )
    return HostCompiler(
        resolved, found_via, tuple(words[:exe_index]), tuple(words[exe_index + 1 :]), tuple(searched)
    )


@cache
def _find_host_compiler(
    env_be: str | None, env_cxx: str | None, conda: str | None, path: str
) -> HostCompiler:
    searched: list[str] = []
    for name, value in (("BRAINEVENT_CXX", env_be), ("CXX", env_cxx)):
        if value:
            return _from_command(value, name, searched)
        searched.append(f"{name} (unset)")
    if conda:
        for name in _CONDA_NAMES:
            candidate = Path(conda) / "bin" / name
            searched.append(f"conda: {candidate}")
            if os.access(candidate, os.X_OK):
                return HostCompiler(str(candidate), "conda", searched=tuple(searched))
    for name in _PATH_NAMES:
        searched.append(f"PATH: {name}")
        found = shutil.which(name, path=path)
        if found:
            return HostCompiler(found, "PATH", searched=tuple(searched))
    raise HostCompilerNotFoundError(
        "No C++ compiler found. Searched: " + "; ".join(searched) + ". Install g++ "
        "(e.g. `apt-get install g++`, or `conda install -c conda-forge cxx-compiler`) "
        "or set CXX to its path.",
        searched=tuple(searched),
    )


def find_host_compiler() -> HostCompiler:
    """The host compiler per the current environment (memoised per environment)."""
    return _find_host_compiler(
        config.CXX.get(), variable("CXX") or None, variable("CONDA_PREFIX") or None, variable("PATH") or ""
    )


clear_cache = _find_host_compiler.cache_clear


# The C driver beside each C++ driver: same installation, same libc, same ABI.
_C_DRIVERS = (("clang++", "clang"), ("g++", "gcc"), ("c++", "cc"))


@cache
def _c_compiler_for(cxx: HostCompiler) -> HostCompiler:
    # .c units: the C driver beside the C++ one, else the C++ driver told the language.
    directory, name = os.path.split(cxx.path)
    for cxx_name, c_name in _C_DRIVERS:
        if cxx_name in name:  # g++-12 -> gcc-12, x86_64-conda-linux-gnu-c++ -> ...-cc
            candidate = os.path.join(directory, name.replace(cxx_name, c_name, 1))
            if os.access(candidate, os.X_OK):
                return HostCompiler(candidate, f"beside {cxx.path}", cxx.wrapper, cxx.extra_flags)
    return HostCompiler(cxx.path, f"{cxx.path} -x c", cxx.wrapper, (*cxx.extra_flags, "-x", "c"))


def find_host_c_compiler() -> HostCompiler:
    """The C compiler of the host toolchain (memoised per host C++ compiler)."""
    return _c_compiler_for(find_host_compiler())


def host_key_inputs() -> dict[str, Any]:
    """The host compilers' and XLA's C API's identity: every platform's binding needs them.
    The host C compiler's is keyed with the C++ compiler's: it builds ``.c`` units. With them,
    the environment the compilers read (``CPATH``...): it changes what they make of a source."""
    cxx, cc = find_host_compiler(), find_host_c_compiler()
    return {
        "environment": keyed_environment(),
        "cxx": cxx.command,
        "cxx_identity": cxx.identity,
        "cc": cc.command,
        "cc_identity": cc.identity,
        "xla_c_api": remembered_digest("xla-c-api", [c_api_header()], c_api_digest),
    }
