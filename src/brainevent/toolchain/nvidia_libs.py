"""NVIDIA libraries a module links (``extra_libraries=["cublas"]``), found by ``cuda-pathfinder``
(imported only then: ~0.2 s). On top of it: flags, the key's identity of each library, typed errors,
and loading each before the module opens, so its ``DT_NEEDED`` entry resolves to the copy linked."""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cache
from typing import Any, NamedTuple

from ..errors import NvidiaLibraryNotFoundError, SpecError
from ..fileio import file_identity
from ..spec.names import is_string_list

# Libraries whose headers pathfinder files under another name (its SUPPORTED_HEADERS_CTK).
_HEADER_NAMES = {"cublasLt": "cublas", "cufftw": "cufft", "cusolverMg": "cusolver", "nvJitLink": "nvjitlink"}

# What `brainevent doctor` looks for: the libraries kernels most often call.
COMMON_LIBRARIES = (
    "cudart", "cublas", "cublasLt", "curand", "cufft", "cusparse", "cusolver", "nvrtc", "nvJitLink"
)  # fmt: skip

# The pip wheels to suggest per library (CUDA 13 names; CUDA 12's end in -cu12).
_WHEELS = {
    "cublas": "nvidia-cublas", "cublasLt": "nvidia-cublas", "curand": "nvidia-curand",
    "cufft": "nvidia-cufft", "cufftw": "nvidia-cufft", "cusparse": "nvidia-cusparse",
    "cusolver": "nvidia-cusolver", "cusolverMg": "nvidia-cusolver", "nvrtc": "nvidia-cuda-nvrtc",
    "nvJitLink": "nvidia-nvjitlink", "cudart": "nvidia-cuda-runtime",
}  # fmt: skip


class NvidiaLibrary(NamedTuple):
    """One library as pathfinder found it."""

    name: str  # pathfinder's name, e.g. "cublas"
    path: str  # the shared library, e.g. .../nvidia/cu13/lib/libcublas.so.13
    found_via: str  # pathfinder's words: "site-packages", "conda", "CUDA_PATH", "system-search", ...
    include_dir: str | None  # its headers' directory, None for a library without headers
    include_found_via: str | None

    @property
    def directory(self) -> str:
        return os.path.dirname(self.path)


def check_names(value: Any) -> tuple[str, ...]:
    """``value`` as a tuple of library names pathfinder knows; SpecError naming the bad one."""
    if value is not None and not is_string_list(value):
        raise SpecError(
            f'extra_libraries={value!r} must be a list of NVIDIA library names, e.g. ["cublas", "curand"].',
            value=value,
        )
    if not value:  # None or empty: pathfinder is not even imported
        return ()
    from cuda.pathfinder import SUPPORTED_NVIDIA_LIBNAMES as known

    for name in value:
        if name not in known:
            from ..spec.names import close_matches

            hint = close_matches(name, known)
            fix = f"Did you mean {hint[0]!r}? " if hint else ""
            raise SpecError(
                f"extra_libraries entry {name!r} is not an NVIDIA library cuda-pathfinder knows; supported: "
                f"{', '.join(known)}. {fix}For any other library pass its flags yourself "
                '(extra_include_paths=[...], extra_ldflags=["-L<dir>", "-l<name>", "-Wl,-rpath,<dir>"]).',
                value=name,
            )
    return tuple(dict.fromkeys(value))  # duplicates dropped, order kept


@cache
def find_library(name: str) -> NvidiaLibrary:
    """The library and its headers, else NvidiaLibraryNotFoundError saying what to install. pathfinder
    finds a library by loading it: from here on it is in the process, as the module needs it."""
    from cuda.pathfinder import (
        DynamicLibNotFoundError,
        load_nvidia_dynamic_lib,
        locate_nvidia_header_directory,
    )

    try:
        loaded = load_nvidia_dynamic_lib(name)
    except DynamicLibNotFoundError as exc:
        detail = " ".join(str(exc).split())  # pathfinder's message spans lines
        raise _not_found(name, f"its shared library was not found ({detail})") from exc
    if loaded.abs_path is None:  # pathfinder could not say where the loader found it
        raise _not_found(name, f"it was loaded (found_via={loaded.found_via}) but its path is unknown")
    include_dir = include_via = None
    header = _header_name(name)
    if header is not None:
        located = locate_nvidia_header_directory(header)
        if located is None or located.abs_path is None:
            problem = f"its shared library is {loaded.abs_path} (found_via={loaded.found_via})"
            raise _not_found(name, f"{problem} but its headers ({header}) were not found")
        include_dir, include_via = located.abs_path, located.found_via
    return NvidiaLibrary(name, loaded.abs_path, loaded.found_via, include_dir, include_via)


_CRT_PROBE = os.path.join("crt", "host_defines.h")


def _has_crt(directory: str | None) -> bool:
    return bool(directory) and os.path.isfile(os.path.join(str(directory), _CRT_PROBE))


@cache
def crt_include_dir() -> str | None:
    # CUDA's crt/ headers, which the runtime's headers include: NVIDIA's pip runtime wheel lacks
    # them (nvidia-cuda-crt ships them), so the host compiler gets the toolkit's (pathfinder's
    # nvcc headers); nvcc brings its own.
    from cuda.pathfinder import locate_nvidia_header_directory

    for located in map(locate_nvidia_header_directory, ("cudart", "nvcc")):
        if located is not None and _has_crt(located.abs_path):
            return str(located.abs_path)
    return None


def preload(names: Sequence[str]) -> list[NvidiaLibrary]:
    """The libraries, loaded into the process (a module linked against them needs them there
    before it is opened: find_library loads each through pathfinder)."""
    return [find_library(name) for name in names]


def _crt_dirs(libs: Sequence[NvidiaLibrary]) -> list[str | None]:
    # Where the crt/ headers some library's headers lack come from (None: nowhere found).
    lacking = any(lib.include_dir and not _has_crt(lib.include_dir) for lib in libs)
    return [crt_include_dir()] if lacking else []


def key_inputs(names: Sequence[str]) -> list[list[Any]]:
    """The cache key's record of the libraries (raises NvidiaLibraryNotFoundError, a
    ToolchainError: without them only an ahead-of-time build can load)."""
    libs = preload(names)
    record = [[lib.name, lib.found_via, file_identity(lib.path), lib.include_dir] for lib in libs]
    return [*record, *(["crt", crt] for crt in _crt_dirs(libs))]


def include_flags(names: Sequence[str]) -> list[str]:
    """``-isystem <dir>`` per header directory: warnings from library headers stay quiet."""
    libs = preload(names)
    # crt/ after the libraries' own directories: only what they lack is taken from there.
    dirs = dict.fromkeys([*(lib.include_dir for lib in libs), *_crt_dirs(libs)])
    return [flag for d in dirs if d for flag in ("-isystem", d)]


def link_flags(names: Sequence[str], *, nvcc: bool = False) -> list[str]:
    """Each library by its full path (pip wheels ship only ``libX.so.N``, so ``-lX`` would not
    find it) and a runtime path to its directory, as g++ or nvcc spells it."""
    paths = [lib.path for lib in preload(names)]
    # nvcc takes no shared library by path ("Don't know what to do with libX.so.N"): name the
    # exact file with -l: in its directory.
    flags = [flag for d, f in map(os.path.split, paths) for flag in (f"-L{d}", f"-l:{f}")] if nvcc else paths
    rpath = "-Xlinker=-rpath," if nvcc else "-Wl,-rpath,"
    return [*flags, *(rpath + directory for directory in dict.fromkeys(map(os.path.dirname, paths)))]


def survey(names: Sequence[str] = COMMON_LIBRARIES) -> list[tuple[str, str]]:
    """(library, what pathfinder finds for it) per name, for `brainevent doctor`."""
    lines = []
    for name in names:
        try:
            lib = find_library(name)
        except NvidiaLibraryNotFoundError:
            lines.append((name, f"not found (e.g. pip install {_WHEELS.get(name, name)})"))
            continue
        headers = f"; headers {lib.include_dir} [{lib.include_found_via}]" if lib.include_dir else ""
        lines.append((name, f"{lib.path} [{lib.found_via}]{headers}"))
    return lines


def _header_name(name: str) -> str | None:
    from cuda.pathfinder import SUPPORTED_HEADERS_CTK

    # A library outside pathfinder's header table (nvblas, a drop-in BLAS; cupti) needs no headers.
    header = "npp" if name.startswith("npp") else _HEADER_NAMES.get(name, name)
    return header if header in SUPPORTED_HEADERS_CTK else None


def _not_found(name: str, problem: str) -> NvidiaLibraryNotFoundError:
    wheel = _WHEELS.get(name, f"the NVIDIA wheel that ships {name}")
    return NvidiaLibraryNotFoundError(
        f"extra_libraries: cannot use {name!r}: {problem}. cuda-pathfinder looked in NVIDIA's pip "
        "wheels, the conda environment ($CONDA_PREFIX), CUDA_PATH/CUDA_HOME and the system's CUDA "
        f"toolkit. Fix: pip install {wheel} (CUDA 13; {wheel}-cu12 for CUDA 12), or conda install the "
        "library's -dev package, or point CUDA_PATH at a toolkit that has it. `brainevent doctor` "
        "lists what is found.",
        library=name,
    )
