"""The public loaders: C++ (CPU) and CUDA (GPU) modules from inline source, one file, or a directory.

Their keyword options are the rows of ``load_options.OPTIONS`` that each platform takes; the
signatures spell them out for users and their tools, the table checks them. Which suffix a
unit gets and which files a file or directory loader takes come from the platform table.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .config import trim_internal_frames
from .platform_table import BUILD_PLATFORMS, CUDA_PLATFORM, HOST_PLATFORM
from .stages.load import load
from .stages.request import inline_unit, join_sources, make_request, paths_request

if TYPE_CHECKING:
    from .runtime.module import CompiledModule

CPU, CUDA = HOST_PLATFORM, CUDA_PLATFORM
# What inline sources are compiled as: each platform's first suffix (".cpp", ".cu").
CPP_SUFFIX, CUDA_SUFFIX = BUILD_PLATFORMS[CPU].suffixes[0], BUILD_PLATFORMS[CUDA].suffixes[0]


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
    keywords = {k: v for k, v in locals().items() if k not in ("name", "cpp_sources", "functions")}
    unit = inline_unit(name, cpp_sources, "cpp_sources", CPP_SUFFIX)
    return load(make_request(CPU, [unit], name, functions, keywords))


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
    return load(paths_request(CPU, "load_cpp_file", path, functions, name, kwargs))


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
    return load(paths_request(CPU, "load_cpp_dir", path, functions, name, kwargs, directory=True))


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
        compute_capability: GPU architecture(s), e.g. ``"sm_86"``, ``"8.6"``, ``"90a"`` or a
            list; detected from the visible GPUs (or ``BRAINEVENT_CUDA_ARCH``) if None.
        auto_register: Register each function as the JAX FFI target
            ``"<target_prefix or name>.<func>"`` on platform CUDA.
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

    ``extra_ldflags``, ``extra_include_paths``, ``build_directory``, ``verbose``,
    ``force_rebuild``, ``replace`` and ``target_prefix`` are as in ``load_cpp_inline``.
    """
    sources = ("name", "cuda_sources", "functions", "cpp_sources")
    keywords = {k: v for k, v in locals().items() if k not in sources}
    units = [inline_unit(name, cuda_sources, "cuda_sources", CUDA_SUFFIX)]
    if cpp_sources is not None:
        join_sources(cpp_sources, "cpp_sources")  # checked before the name is reused
        host_name = f"{name}_host" if isinstance(name, str) else name
        units.append(inline_unit(host_name, cpp_sources, "cpp_sources", CPP_SUFFIX))
    return load(make_request(CUDA, units, name, functions, keywords))


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
    return load(paths_request(CUDA, "load_cuda_file", path, functions, name, kwargs))


@trim_internal_frames
def load_cuda_dir(
    path: str | os.PathLike[str], functions: Any = None, *, name: str | None = None, **kwargs: Any
) -> CompiledModule:
    """Compile every ``.cu``/``.cpp``/``.c`` file of a directory, each as its own object, in
    parallel (``.c`` files by the host C compiler, the rest by nvcc); ``name`` defaults to the
    directory's name. Headers and objects as in ``load_cpp_dir``; keywords as ``load_cuda_inline``."""
    return load(paths_request(CUDA, "load_cuda_dir", path, functions, name, kwargs, directory=True))


# The file loader of each build platform (`brainevent build --into` picks by a file's suffix).
FILE_LOADERS = {CPU: load_cpp_file, CUDA: load_cuda_file}
