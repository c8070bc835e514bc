"""What an editor or a CMake build needs to compile a kernel file the way brainevent does:
a ``compile_commands.json`` for clangd, the include directories as flags (``brainevent
includes``), or a CMake package (``find_package(brainevent CONFIG)``, ``brainevent::headers``).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from .fileio import atomic_write
from .headers import INCLUDE_DIR, xla_include_dir
from .platform_table import BUILD_PLATFORMS, C_SUFFIXES, UNIT_SUFFIXES


def include_dirs() -> list[Path]:
    """brainevent's headers, then XLA's (from the installed jaxlib)."""
    return [INCLUDE_DIR, xla_include_dir()]


# clangd takes the CUDA version from -target-sdk-version alone. Without it, or with a version
# newer than it knows (clangd 16 knows up to 11.8, 20 up to 12.8, 22 up to 13.0), it assumes
# CUDA older than 9.2 and reports ``cudaConfigureCall`` undeclared on every ``<<<...>>>``
# launch. Launches read the same from 9.2 on: the toolkit's version is capped at 11.8.
_CLANGD_KNOWS_CUDA = (11, 8)


def _cuda_toolkit() -> list[str]:
    """clang's flags for the toolkit of the nvcc brainevent would use, if any."""
    from .errors import BrainEventError
    from .toolchain.nvcc import find_nvcc

    try:
        nvcc = find_nvcc()
    except BrainEventError:
        return []
    major, minor = min(tuple(nvcc.version[:2]), _CLANGD_KNOWS_CUDA)
    root = Path(nvcc.path).resolve().parent.parent
    return [f"--cuda-path={root}", "-Xclang", f"-target-sdk-version={major}.{minor}"]


def _arguments(file: Path, directory: Path, extra: list[str], cuda_arch: str) -> list[str]:
    includes = [f"-I{d}" for d in (*include_dirs(), directory)]
    if file.suffix in C_SUFFIXES:
        return ["cc", "-std=gnu17", *includes, *extra, "-c", str(file)]
    if file.suffix in BUILD_PLATFORMS["cuda"].suffixes:
        cuda = ["-x", "cuda", f"--cuda-gpu-arch={cuda_arch}", "-nocudalib", "-Wno-unknown-cuda-version"]
        cuda += _cuda_toolkit()
        return ["clang++", "-std=c++17", *cuda, *includes, *extra, "-c", str(file)]
    return ["c++", "-std=c++17", *includes, *extra, "-c", str(file)]


def compile_commands(
    directory: str | Path, *, extra_flags: list[str] | None = None, cuda_arch: str = "sm_80"
) -> list[dict[str, Any]]:
    """One compilation-database entry per kernel file directly under ``directory``."""
    root = Path(directory).expanduser().resolve()
    files = sorted(p for p in root.iterdir() if p.is_file() and p.suffix in UNIT_SUFFIXES)
    extra = list(extra_flags or ())
    return [
        {"directory": str(root), "file": str(f), "arguments": _arguments(f, root, extra, cuda_arch)}
        for f in files
    ]


def write_compile_commands(
    directory: str | Path, *, output: str | Path | None = None, **options: Any
) -> tuple[Path, int]:
    """Writes ``<directory>/compile_commands.json`` (or ``output``); its path and the number of
    files. A symbolic link there (clangd's usual one to a build's database, or one planted in a
    shared checkout) is never written through nor replaced: FileExistsError, naming it."""
    entries = compile_commands(directory, **options)
    path = Path(output or Path(directory).expanduser().resolve() / "compile_commands.json").expanduser()
    try:
        atomic_write(path, json.dumps(entries, indent=2) + "\n", mode=0o644, replace_link=False)
    except FileExistsError as exc:
        fix = "write the database elsewhere with --output PATH (output=), or remove the link"
        raise FileExistsError(exc.errno, f"{exc.strerror}; {fix}", exc.filename) from None
    return path, len(entries)


def include_flags() -> str:
    return " ".join(shlex.quote(f"-I{d}") for d in include_dirs())


def write_cmake_config(directory: str | Path) -> Path:
    """A CMake package (``braineventConfig.cmake``) in ``directory``: point ``brainevent_DIR``
    at it and ``find_package(brainevent CONFIG REQUIRED)`` gives ``brainevent::headers``.
    The paths are those of this installation (and its jaxlib): write it again after an upgrade."""
    from ._version import __version__
    from .trust import check_root

    # CMake runs what this directory holds: it, and each directory above it, must be one that no
    # other user can change, as for the cache (missing levels are made 0700, the files 0600).
    target = Path(directory).expanduser().absolute()
    check_root(target, create=True, fix="Choose a directory only you can write (--cmake-dir DIR).")
    dirs = [str(d) for d in include_dirs()]
    # CMake turns a backslash in an include directory into a slash: such a one goes in as a flag.
    plain, slashed = [d for d in dirs if "\\" not in d], [f"-isystem{d}" for d in dirs if "\\" in d]
    flags = f"    INTERFACE_COMPILE_OPTIONS {_cmake_list(slashed)}\n" if slashed else ""
    files = {
        "braineventConfig.cmake": (
            f"# Written by `brainevent includes --cmake-dir` for brainevent {__version__}.\n"
            f"set(brainevent_VERSION {__version__})\n"
            f"set(brainevent_INCLUDE_DIRS {_cmake_list(dirs)})\n"
            "if(NOT TARGET brainevent::headers)\n"
            "  add_library(brainevent::headers INTERFACE IMPORTED)\n"
            "  set_target_properties(brainevent::headers PROPERTIES\n"
            f"    INTERFACE_INCLUDE_DIRECTORIES {_cmake_list(plain)}\n{flags}"
            "    INTERFACE_COMPILE_FEATURES cxx_std_17)\n"
            "endif()\n"
        ),
        "braineventConfigVersion.cmake": (
            f'set(PACKAGE_VERSION "{__version__}")\nset(PACKAGE_VERSION_COMPATIBLE TRUE)\n'
            "if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)\n"
            "  set(PACKAGE_VERSION_COMPATIBLE FALSE)\n"
            "endif()\n"
        ),
    }
    for name, text in files.items():
        atomic_write(target / name, text)
    return target


def _cmake_list(items: list[str]) -> str:
    """``items`` as one CMake quoted argument holding a list of them: ``\\``, ``"`` and ``$``
    escaped, a ``;`` inside an item kept from splitting it, ``$<`` kept from reading as a
    generator expression."""
    escaped = []
    for item in items:
        for char in '\\"$;':
            item = item.replace(char, "\\" + char)
        escaped.append(item.replace("\\$<", "$<1:\\$><"))
    return '"' + ";".join(escaped) + '"'
