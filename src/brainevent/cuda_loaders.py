"""The public loaders for CUDA (GPU) modules: inline source, one file, or a directory."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .backends import CudaBackend
from .errors import SpecError
from .loaders import join_sources, name_from_path, read_source_file
from .pipeline import LoadOptions, SourceUnit, as_flags, load_module
from .runtime.module import CompiledModule

_DIR_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx")


def load_cuda_inline(
    name: str,
    cuda_sources: str | Sequence[str],
    functions: Any = None,
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
) -> CompiledModule:
    """Compile inline CUDA source and load the resulting module.

    Args:
        name: Module name (used for caching and FFI target naming).
        cuda_sources: CUDA C++ source code; a list of strings is concatenated.
        functions: ``{"func": ["arg", "arg", "ret", "stream"]}``; a list of names (specs
            inferred from the C++ signatures); or ``None`` to use ``// @BE`` annotations.
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
    """
    source = join_sources(cuda_sources, "cuda_sources")
    display = f"{name}.cu" if isinstance(name, str) else "inline.cu"
    options = _options(
        name,
        functions,
        extra_cuda_cflags,
        extra_ldflags,
        extra_include_paths,
        build_directory,
        verbose,
        force_rebuild,
        auto_register,
        target_prefix,
        ninja_workers,
        optimization_level,
        use_fast_math,
        allow_cuda_graph,
        replace,
    )
    return _load([SourceUnit(display, source, None, ".cu")], options, compute_capability)


def load_cuda_file(
    path: str | os.PathLike[str], functions: Any = None, *, name: str | None = None, **kwargs: Any
) -> CompiledModule:
    """Compile one ``.cu`` file (its directory is on the include path). Keywords as ``load_cuda_inline``."""
    resolved, text = read_source_file(path, (".cu",))
    suffix = ".cu" if resolved.suffix == ".cu" else ".cpp"
    return _load_units(
        [SourceUnit(str(resolved), text, resolved.parent, suffix)],
        functions,
        name if name is not None else name_from_path(resolved),
        kwargs,
    )


def load_cuda_dir(
    path: str | os.PathLike[str], functions: Any = None, *, name: str | None = None, **kwargs: Any
) -> CompiledModule:
    """Compile every ``.cu``/``.cpp`` file of a directory, each as its own object, in parallel.

    Headers beside the sources are on the include path and tracked in the cache key;
    objects are cached by content, so editing one file rebuilds one object and the link.
    """
    directory = Path(path).expanduser().resolve()
    if not directory.is_dir():
        raise SpecError(
            f"load_cuda_dir: {str(path)!r} is not a directory; pass a folder of .cu/.cpp files.",
            value=str(path),
        )
    files = sorted(p for p in directory.iterdir() if p.suffix in _DIR_SUFFIXES and p.is_file())
    if not files:
        raise SpecError(
            f"load_cuda_dir: {directory} holds no {'/'.join(_DIR_SUFFIXES)} files.", value=str(path)
        )
    units = []
    for file in files:
        _, text = read_source_file(file, _DIR_SUFFIXES)
        units.append(SourceUnit(str(file), text, directory, ".cu" if file.suffix == ".cu" else ".cpp"))
    return _load_units(units, functions, name if name is not None else name_from_path(directory), kwargs)


def _load_units(units: list[SourceUnit], functions: Any, name: str, kwargs: dict[str, Any]) -> CompiledModule:
    allowed = set(load_cuda_inline.__kwdefaults__ or {})
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise TypeError(f"unexpected keyword argument(s) {unknown}; accepted: {sorted(allowed)}")
    merged = {**(load_cuda_inline.__kwdefaults__ or {}), **kwargs}
    compute_capability = merged.pop("compute_capability")
    options = _options(name, functions, **merged)
    return _load(units, options, compute_capability)


def _options(
    name: str,
    functions: Any,
    extra_cuda_cflags: Sequence[str] | None,
    extra_ldflags: Sequence[str] | None,
    extra_include_paths: Sequence[str] | None,
    build_directory: str | None,
    verbose: bool,
    force_rebuild: bool,
    auto_register: bool,
    target_prefix: str | None,
    ninja_workers: int | None,
    optimization_level: int,
    use_fast_math: bool,
    allow_cuda_graph: bool,
    replace: bool = False,
) -> LoadOptions:
    return LoadOptions(
        name=name,
        functions=functions,
        extra_cflags=as_flags(extra_cuda_cflags, "extra_cuda_cflags"),
        extra_ldflags=as_flags(extra_ldflags, "extra_ldflags"),
        extra_include_paths=as_flags(extra_include_paths, "extra_include_paths"),
        build_directory=build_directory,
        verbose=verbose,
        force_rebuild=force_rebuild,
        auto_register=auto_register,
        target_prefix=target_prefix,
        optimization_level=optimization_level,
        use_fast_math=use_fast_math,
        ninja_workers=ninja_workers,
        allow_cuda_graph=allow_cuda_graph,
        replace=replace,
    )


def _load(units: list[SourceUnit], options: LoadOptions, compute_capability: Any) -> CompiledModule:
    from .pipeline import check_options

    check_options(options)  # before the toolchain search, so bad arguments are reported first
    return load_module(units, options, CudaBackend(compute_capability))
