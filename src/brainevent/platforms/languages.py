"""Per-language flags, OpenMP and link checks that every platform shares. C++, CUDA (nvcc) and C
(the host C compiler) units share the user's one flag list: a language standard goes to the units
of its language, and nvcc's own options never reach the host compilers."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..build import BUILD_DIR
from ..platform_table import C_SUFFIXES

if TYPE_CHECKING:
    from ..load_options import LoadOptions, SourceUnit

C_SUFFIX = C_SUFFIXES[0]
C_STANDARD = "-std=gnu17"  # C17 with the GNU extensions most existing C code assumes

# Flags of ours for every host compile (through nvcc as -Xcompiler=...). -fvisibility=hidden keeps
# the dynamic symbol table to the handlers (a faster dlopen); -ffile-prefix-map keeps the staging
# directory out of debug info and __FILE__, so two clean builds are byte-identical.
HOST_COMMON_FLAGS = ("-fPIC", "-fvisibility=hidden", f"-ffile-prefix-map={BUILD_DIR}=.")
# And every host C++ compile (the binding's decoder and the C++ units of CPU modules).
HOST_CXX_FLAGS = ("-std=c++17", *HOST_COMMON_FLAGS)

# Patterns, compiled by `re` on first use: a cache hit imports this module and matches none.
_CXX_STD = r"-std=(c|gnu)\+\+\w+"
_C_STD = r"-std=(c|gnu|iso9899:)\w+"


def is_c_unit(unit: SourceUnit) -> bool:
    return unit.suffix == C_SUFFIX


def is_cxx_standard(flag: str) -> bool:
    return bool(re.fullmatch(_CXX_STD, flag))


def is_c_standard(flag: str) -> bool:
    return bool(re.fullmatch(_C_STD, flag)) and not is_cxx_standard(flag)


def cxx_flags(flags: Sequence[str]) -> list[str]:
    """The user's flags for a C++ or CUDA unit: a C standard (``-std=c11``) is for C units only."""
    return [f for f in flags if not is_c_standard(f)]


def c_flags(flags: Sequence[str]) -> list[str]:
    """The C standard (``-std=gnu17`` unless the user named one), then the user's flags fit
    for C: a C++ standard stays with the C++ units."""
    kept = [f for f in flags if not is_cxx_standard(f)]
    return ([] if any(is_c_standard(f) for f in kept) else [C_STANDARD]) + kept


# nvcc options that take their value as the next word (dropped with it for the C compiler).
_NVCC_VALUE_OPTIONS = frozenset(
    {"-gencode", "--generate-code", "-arch", "--gpu-architecture", "-code", "--gpu-code", "-ccbin",
     "--compiler-bindir", "-Xptxas", "--ptxas-options", "-Xlinker", "--linker-options", "-maxrregcount",
     "--maxrregcount", "-t", "--threads", "-Xnvlink", "--nvlink-options", "-rdc", "--relocatable-device-code"}
)  # fmt: skip
# nvcc's own spellings that a host prefix below would otherwise keep (-gencode=..., -maxrregcount=...).
_NVCC_PREFIXES = ("--", "-gencode", "-G", "-maxrregcount", "-dc", "-dlto", "-dlink")
# Options the host C compiler understands; every other nvcc option is nvcc's own.
_HOST_PREFIXES = ("-D", "-U", "-I", "-O", "-f", "-W", "-g", "-m", "-std=", "-isystem", "-iquote", "-include")


def _host_lists(flags: Sequence[str]) -> Iterator[tuple[str, bool]]:
    """Each word of a flag list, and whether nvcc hands it to the host compiler: the values of
    ``-Xcompiler=a,b`` / ``-Xcompiler a,b`` (``--compiler-options`` alike) split at commas."""
    words = iter(flags)
    for flag in words:
        if flag in ("-Xcompiler", "--compiler-options"):
            values = next(words, "")
        elif flag.startswith(("-Xcompiler=", "--compiler-options=")):
            values = flag.split("=", 1)[1]
        else:
            yield flag, False
            continue
        for value in values.split(","):
            yield value, True


def host_flags_from_nvcc(flags: Sequence[str]) -> list[str]:
    """The host compiler's share of an nvcc flag list: ``-Xcompiler`` values unwrapped,
    preprocessor, warning and optimisation flags kept, nvcc-only options dropped."""
    out: list[str] = []
    words = _host_lists(flags)
    for flag, for_host in words:
        if for_host:
            out.append(flag)
        elif flag == "--use_fast_math":
            out.append("-ffast-math")
        elif flag in _NVCC_VALUE_OPTIONS:
            next(words, None)
        elif flag in ("-I", "-D", "-U", "-isystem", "-include"):
            out += [flag, next(words, ("", False))[0]]
        elif flag.startswith(_HOST_PREFIXES) and not flag.startswith(_NVCC_PREFIXES):
            out.append(flag)
    return [f for f in out if f]


# Include-directory options a flag list may carry instead of extra_include_paths.
_INCLUDE_OPTIONS = ("-I", "-isystem", "-iquote", "-idirafter", "--include-path")


def flag_include_dirs(flags: Sequence[str]) -> list[Path]:
    """The directories ``-I DIR`` / ``-IDIR`` / ``-isystem DIR`` / ``--include-path=DIR`` ... of
    a flag list, those in nvcc's ``-Xcompiler`` lists too (the host compiler searches them)."""
    dirs: list[Path] = []
    words = (word for word, _ in _host_lists(flags))
    for word in words:
        option = next((o for o in _INCLUDE_OPTIONS if word.startswith(o)), None)
        value = (word[len(option) :].lstrip("=") or next(words, "")) if option else ""
        if value:
            dirs.append(Path(value))
    return dirs


def openmp_flags(options: LoadOptions, *, nvcc: bool = False) -> list[str]:
    """One switch compiles the pragmas and links the runtime (libgomp for GCC, libomp for Clang):
    the host compiler's driver picks the library, under nvcc too (it links with that driver)."""
    if not options.openmp:
        return []
    return ["-Xcompiler=-fopenmp"] if nvcc else ["-fopenmp"]


# Every symbol must resolve at link time, not when a GPU host loads the module: an undefined one is a
# build error naming it (docs/existing-code.md; -Wl,-z,undefs or -Xlinker=-z,undefs undo it).
HOST_LINK_CHECKS = ("-Wl,-z,defs",)
NVCC_LINK_CHECKS = ("-Xlinker", "-z,defs")


def optional_header_flags(options: LoadOptions, unit: SourceUnit, *, cuda: bool) -> list[str]:
    """``-D<macro>=0`` for the optional parts of ``common.h`` (``<complex>``, the checking
    half; with ``cuda``, CUDA's half headers) that a C++ or CUDA unit and its project headers
    never use (build/optional_headers.py)."""
    from ..build.optional_headers import optional_header_flags as flags_for

    # Headers on -I flags are read too (extra_cflags may carry them instead of extra_include_paths).
    search = [Path(p) for p in options.extra_include_paths] + flag_include_dirs(options.extra_cflags)
    return flags_for(unit.text, unit.directory, search, options.extra_cflags, cuda=cuda)
