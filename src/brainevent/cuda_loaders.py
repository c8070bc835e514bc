"""The public loaders for CUDA (GPU) modules: inline source, one file, or a directory."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .config import trim_internal_frames
from .platforms.devices import CUDA_PLATFORM as CUDA
from .stages.recall import attempt

# The pipeline loads when a call is not recalled (stages/recall.py).
if TYPE_CHECKING:
    from .runtime.module import CompiledModule


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
    arguments = dict(locals())
    call, recalled = attempt("load_cuda_inline", CUDA, arguments)
    if recalled is not None:
        return recalled
    from .load_options import keywords_of
    from .stages.load import load
    from .stages.request import inline_unit, join_sources, make_request

    keywords = {key: value for key, value in arguments.items() if key in keywords_of(CUDA)}
    units = [inline_unit(name, cuda_sources, "cuda_sources", ".cu")]
    if cpp_sources is not None:
        join_sources(cpp_sources, "cpp_sources")  # checked before the name is reused
        units.append(
            inline_unit(f"{name}_host" if isinstance(name, str) else name, cpp_sources, "cpp_sources", ".cpp")
        )
    return load(make_request(CUDA, units, name, functions, keywords), call)


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
    from .stages.load import load
    from .stages.request import paths_request

    return load(paths_request(CUDA, "load_cuda_file", path, functions, name, kwargs))


@trim_internal_frames
def load_cuda_dir(
    path: str | os.PathLike[str], functions: Any = None, *, name: str | None = None, **kwargs: Any
) -> CompiledModule:
    """Compile every ``.cu``/``.cpp``/``.c`` file of a directory, each as its own object, in parallel.

    ``.cu`` and C++ files go through nvcc; ``.c`` files to the host C compiler.

    Headers beside the sources are on the include path and tracked in the cache key;
    objects are cached by content, so editing one file rebuilds one object and the link.
    """
    from .stages.load import load
    from .stages.request import paths_request

    return load(paths_request(CUDA, "load_cuda_dir", path, functions, name, kwargs, directory=True))
