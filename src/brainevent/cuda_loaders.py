"""The public loaders for CUDA (GPU) modules: inline source, one file, or a directory."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import SpecError
from .platforms.devices import BUILD_PLATFORMS, C_SUFFIXES
from .runtime.module import CompiledModule
from .stages.load import load
from .stages.request import (
    CPP_SUFFIXES,
    LoadRequest,
    SourceUnit,
    file_request_parts,
    inline_unit,
    join_sources,
    keyword_options,
    make_options,
    name_from_path,
    read_source_file,
    refuse_c_only,
    unit_suffix,
)
from .user_errors import trim_internal_frames

_DIR_SUFFIXES = (*BUILD_PLATFORMS["cuda"].suffixes, *CPP_SUFFIXES, *C_SUFFIXES)

# The keyword options of the CUDA loaders (the file and directory loaders take them
# through **kwargs); compute_capability goes to the platform, the rest are LoadOptions.
CUDA_KEYWORDS = (
    "extra_cuda_cflags",
    "extra_ldflags",
    "extra_include_paths",
    "build_directory",
    "verbose",
    "compute_capability",
    "force_rebuild",
    "replace",
    "auto_register",
    "target_prefix",
    "ninja_workers",
    "optimization_level",
    "use_fast_math",
    "allow_cuda_graph",
    "extra_libraries",
    "openmp",
    "debug",
)


@trim_internal_frames
def load_cuda_inline(
    name: str,
    cuda_sources: str | Sequence[str],
    functions: Any = None,
    cpp_sources: str | Sequence[str] | None = None,
    *,
    extra_cuda_cflags: Sequence[str] | None = None,
    extra_ldflags: Sequence[str] | None = None,
    extra_include_paths: Sequence[str] | None = None,
    build_directory: str | None = None,
    verbose: bool = False,
    compute_capability: str | Sequence[str] | None = None,
    force_rebuild: bool = False,
    replace: bool = False,
    auto_register: bool = True,
    target_prefix: str | None = None,
    ninja_workers: int | None = None,
    optimization_level: int = 3,
    use_fast_math: bool = False,
    allow_cuda_graph: bool = True,
    extra_libraries: Sequence[str] | None = None,
    openmp: bool = False,
    debug: bool | None = None,
) -> CompiledModule:
    """Compile inline CUDA source and load the resulting module.

    Args:
        name: Module name (used for caching and FFI target naming).
        cuda_sources: CUDA C++ source code; a list of strings is concatenated.
        functions: ``{"func": ["arg", "arg", "ret", "stream"]}``; a list of names (specs
            inferred from the C++ signatures); or ``None`` to use ``// @BE`` annotations.
        cpp_sources: Host C++ source compiled as a second unit of the same module (as
            ``torch.utils.cpp_extension.load_inline`` has it); entry points may live in either.
        extra_cuda_cflags: Additional nvcc flags.
        extra_ldflags: Additional link flags.
        extra_include_paths: Additional include directories.
        build_directory: Use this directory as the cache root.
        verbose: Log the build's commands and progress to stderr.
        compute_capability: GPU architecture(s), e.g. ``"sm_86"``, ``"8.6"``, ``"90a"`` or a
            list; detected from the visible GPUs (or ``BRAINEVENT_CUDA_ARCH``) if None.
        force_rebuild: Compile even if an identical build is cached.
        replace: Let this module take over FFI targets that another module registered
            (same ``target_prefix`` and function name); without it that is a
            ``RegistrationError``. Reloading the same module never needs it.
        auto_register: Register each function as the JAX FFI target
            ``"<target_prefix or name>.<func>"`` on platform CUDA.
        target_prefix: Prefix for the target names.
        ninja_workers: Parallel compile jobs (default: all CPUs).
        optimization_level: ``-O<n>`` for host and device code, 0 to 3 (default 3).
        use_fast_math: Pass ``--use_fast_math`` to nvcc.
        allow_cuda_graph: Register the handlers as command-buffer compatible so XLA may
            capture them in CUDA graphs. Registration only: not part of the cache key.
        extra_libraries: NVIDIA libraries to compile and link against, e.g.
            ``["cublas", "curand"]``: headers and shared libraries found by cuda-pathfinder in
            NVIDIA's pip wheels, conda or the system, linked with a runtime path and loaded
            before the module (see docs/existing-code.md).
        openmp: Compile and link host code with OpenMP (``-Xcompiler=-fopenmp``; the same as
            giving ``-fopenmp`` in ``extra_cuda_cflags``).
        debug: Build with ``-g -lineinfo -O0`` and ``BE_DEBUG=1``; None reads ``BRAINEVENT_DEBUG``.
    """
    keywords = {key: value for key, value in locals().items() if key in CUDA_KEYWORDS}
    units = [inline_unit(name, cuda_sources, "cuda_sources", ".cu")]
    if cpp_sources is not None:
        join_sources(cpp_sources, "cpp_sources")  # checked before the name is reused
        units.append(
            inline_unit(f"{name}_host" if isinstance(name, str) else name, cpp_sources, "cpp_sources", ".cpp")
        )
    return load(cuda_request(units, name, functions, keywords))


@trim_internal_frames
def load_cuda_file(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    functions: Any = None,
    *,
    name: str | None = None,
    **kwargs: Any,
) -> CompiledModule:
    """Compile one ``.cu`` file (its directory is on the include path), or a list of
    ``.cu``/``.cpp``/``.c`` files linked into one module. Keywords as ``load_cuda_inline``."""
    units, module_name, keywords = file_request_parts(
        path, cuda_file_unit, "load_cuda_file", kwargs, CUDA_KEYWORDS, name
    )
    return load(cuda_request(units, module_name, functions, keywords))


@trim_internal_frames
def load_cuda_dir(
    path: str | os.PathLike[str], functions: Any = None, *, name: str | None = None, **kwargs: Any
) -> CompiledModule:
    """Compile every ``.cu``/``.cpp``/``.c`` file of a directory, each as its own object, in parallel.

    ``.cu`` and C++ files go through nvcc; ``.c`` files to the host C compiler.

    Headers beside the sources are on the include path and tracked in the cache key;
    objects are cached by content, so editing one file rebuilds one object and the link.
    """
    directory, units = cuda_dir_units(path)
    refuse_c_only(units, "load_cuda_dir")
    keywords = keyword_options("load_cuda_dir", kwargs, CUDA_KEYWORDS)
    module_name = name if name is not None else name_from_path(directory)
    return load(cuda_request(units, module_name, functions, keywords))


def cuda_file_unit(path: str | os.PathLike[str]) -> SourceUnit:
    resolved, text = read_source_file(path, _DIR_SUFFIXES)
    return SourceUnit(str(resolved), text, resolved.parent, unit_suffix(resolved))


def cuda_dir_units(path: str | os.PathLike[str]) -> tuple[Path, list[SourceUnit]]:
    """The directory and one unit per ``.cu``/``.cpp``/``.c`` file in it, sorted by name."""
    from .loaders import source_dir_units

    return source_dir_units(path, _DIR_SUFFIXES, "load_cuda_dir")


def cuda_request(
    units: Sequence[SourceUnit], name: str, functions: Any, keywords: Mapping[str, Any]
) -> LoadRequest:
    """A checked request to build ``units`` as a CUDA module; the options are checked before
    the toolchain is searched, so bad arguments are reported first."""
    from .platforms import create

    options = dict(keywords)
    compute_capability = options.pop("compute_capability", None)
    if "extra_cuda_cflags" in options:
        options["extra_cflags"] = options.pop("extra_cuda_cflags")
    _refuse_cudart(options.get("extra_libraries"))
    from .debug_mode import debug_keywords

    options = debug_keywords(options, cuda=True)
    checked = make_options(name, options, labels={"extra_cflags": "extra_cuda_cflags"})
    return LoadRequest(
        tuple(units), functions, checked, create("cuda", compute_capability=compute_capability)
    )


def _refuse_cudart(libraries: Any) -> None:
    """nvcc links the CUDA runtime (statically) into every CUDA module: a second, shared copy
    would give the module two runtimes with separate state."""
    if isinstance(libraries, (list, tuple)) and "cudart" in libraries:
        raise SpecError(
            "extra_libraries entry 'cudart': a CUDA module already has the CUDA runtime (nvcc links it "
            "statically) and its headers; remove 'cudart' from extra_libraries.",
            value="cudart",
        )
