"""The public loaders for C++ (CPU) modules. The CUDA twins live in ``cuda_loaders``."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import SpecError
from .platforms.devices import C_SUFFIXES
from .runtime.module import CompiledModule
from .stages.load import load
from .stages.request import (
    CPP_SUFFIXES,
    LoadRequest,
    SourceUnit,
    file_request_parts,
    inline_unit,
    keyword_options,
    make_options,
    name_from_path,
    read_source_file,
    refuse_c_only,
    unit_suffix,
)
from .user_errors import trim_internal_frames

# The keyword options of the C++ loaders (load_cpp_file takes them through **kwargs).
CPP_KEYWORDS = (
    "extra_cflags",
    "extra_ldflags",
    "extra_include_paths",
    "build_directory",
    "verbose",
    "force_rebuild",
    "replace",
    "auto_register",
    "target_prefix",
    "optimization_level",
    "use_fast_math",
    "extra_libraries",
    "openmp",
    "debug",
)


@trim_internal_frames
def load_cpp_inline(
    name: str,
    cpp_sources: str | Sequence[str],
    functions: Any = None,
    *,
    extra_cflags: Sequence[str] | None = None,
    extra_ldflags: Sequence[str] | None = None,
    extra_include_paths: Sequence[str] | None = None,
    build_directory: str | None = None,
    verbose: bool = False,
    force_rebuild: bool = False,
    replace: bool = False,
    auto_register: bool = True,
    target_prefix: str | None = None,
    optimization_level: int = 3,
    use_fast_math: bool = False,
    extra_libraries: Sequence[str] | None = None,
    openmp: bool = False,
    debug: bool | None = None,
) -> CompiledModule:
    """Compile inline C++ source for the CPU and register its functions as JAX FFI targets.

    Args:
        name: Module name; targets are ``"<target_prefix or name>.<function>"``.
        cpp_sources: C++ source code, or a list of strings that are concatenated.
        functions: ``{"func": ["arg", "ret", ...]}`` explicit arg_specs; a list of function
            names whose specs are inferred from their C++ signatures; or ``None`` to use
            ``// @BE name [tokens]`` annotations in the source.
        extra_cflags: Additional compiler flags, e.g. ``["-DNDEBUG"]``.
        extra_ldflags: Additional linker flags, e.g. ``["-lm"]``.
        extra_include_paths: Additional include directories.
        build_directory: Use this directory as the cache root instead of the default.
        verbose: Log the build's commands and progress to stderr.
        force_rebuild: Compile even if an identical build is cached.
        replace: Let this module take over FFI targets that another module registered
            (same ``target_prefix`` and function name); without it that is a
            ``RegistrationError``. Reloading the same module never needs it.
        auto_register: Register each function with JAX (platform ``cpu``).
        target_prefix: Prefix of the target names (default: ``name``).
        optimization_level: ``-O<n>``, 0 to 3 (default 3).
        use_fast_math: Compile with ``-ffast-math``.
        extra_libraries: NVIDIA libraries to compile and link against, e.g. ``["nvrtc"]`` or
            ``["cudart"]``, found by cuda-pathfinder in NVIDIA's pip wheels, conda or the system
        openmp: Compile and link with OpenMP (``-fopenmp``; the same as giving ``-fopenmp`` in
            ``extra_cflags``). The runtime waits passively unless ``OMP_WAIT_POLICY`` is set
            (see docs/existing-code.md).
        debug: Build with ``-g -O0`` and ``BE_DEBUG=1`` (bounds-checked ``BE::Tensor::at<T>()``);
            None reads ``BRAINEVENT_DEBUG`` (see docs/troubleshooting.md).

    A ``stream`` parameter is accepted and receives 0, so one source can serve CPU and GPU.
    """
    keywords = {key: value for key, value in locals().items() if key in CPP_KEYWORDS}
    unit = inline_unit(name, cpp_sources, "cpp_sources", ".cpp")
    return load(cpp_request([unit], name, functions, keywords))


@trim_internal_frames
def load_cpp_file(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    functions: Any = None,
    *,
    name: str | None = None,
    **kwargs: Any,
) -> CompiledModule:
    """Compile a C++ file, or a list of C++ and C files linked into one module; ``name``
    defaults to the (first) file's stem. Other keywords as ``load_cpp_inline``.

    Each file's directory is on its include path, and the project headers it includes
    (transitively) are tracked. ``.c`` files are compiled as C; entry points live in the C++ files.
    """
    units, module_name, keywords = file_request_parts(
        path, cpp_file_unit, "load_cpp_file", kwargs, CPP_KEYWORDS, name
    )
    return load(cpp_request(units, module_name, functions, keywords))


@trim_internal_frames
def load_cpp_dir(
    path: str | os.PathLike[str], functions: Any = None, *, name: str | None = None, **kwargs: Any
) -> CompiledModule:
    """Compile every ``.cpp``/``.cc``/``.cxx``/``.c`` file of a directory into one module,
    each file its own object, in parallel; ``name`` defaults to the directory's name.

    Headers beside the sources are on the include path and tracked; objects are cached by
    content, so editing one file recompiles that file and the link. Keywords as
    ``load_cpp_inline``.
    """
    directory, units = source_dir_units(path, (*CPP_SUFFIXES, *C_SUFFIXES), "load_cpp_dir")
    refuse_c_only(units, "load_cpp_dir")
    keywords = keyword_options("load_cpp_dir", kwargs, CPP_KEYWORDS)
    module_name = name if name is not None else name_from_path(directory)
    return load(cpp_request(units, module_name, functions, keywords))


def cpp_file_unit(path: str | os.PathLike[str]) -> SourceUnit:
    resolved, text = read_source_file(path, (*CPP_SUFFIXES, *C_SUFFIXES))
    return SourceUnit(str(resolved), text, resolved.parent, unit_suffix(resolved))


def source_dir_units(
    path: str | os.PathLike[str], suffixes: Sequence[str], caller: str
) -> tuple[Path, list[SourceUnit]]:
    """The directory and one unit per source file in it (not its subdirectories), sorted by name."""
    directory = Path(path).expanduser().resolve()
    if not directory.is_dir():
        raise SpecError(
            f"{caller}: {str(path)!r} is not a directory; pass a folder of {'/'.join(suffixes)} files.",
            value=str(path),
        )
    files = sorted(p for p in directory.iterdir() if p.suffix in suffixes and p.is_file())
    if not files:
        raise SpecError(f"{caller}: {directory} holds no {'/'.join(suffixes)} files.", value=str(path))
    units = []
    for file in files:
        _, text = read_source_file(file, suffixes)
        units.append(SourceUnit(str(file), text, directory, unit_suffix(file)))
    return directory, units


def cpp_request(
    units: Sequence[SourceUnit], name: str, functions: Any, keywords: Mapping[str, Any]
) -> LoadRequest:
    """A checked request to build ``units`` as a C++ (CPU) module."""
    from .debug_mode import debug_keywords
    from .platforms import create

    options = make_options(name, debug_keywords(keywords, cuda=False))
    return LoadRequest(tuple(units), functions, options, create("cpu"))
