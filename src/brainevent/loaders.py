"""The public loaders for C++ (CPU) modules. The CUDA twins live in ``cuda_loaders``."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .backends import CpuBackend
from .errors import SpecError
from .pipeline import LoadOptions, SourceUnit, as_flags, load_module
from .runtime.module import CompiledModule


def join_sources(sources: str | Sequence[str], parameter: str) -> str:
    if isinstance(sources, str):
        return check_encodable(sources, parameter)
    if isinstance(sources, Sequence) and all(isinstance(s, str) for s in sources):
        return check_encodable("\n".join(sources), parameter)
    raise SpecError(
        f"{parameter} must be a string of source code or a list of strings, got {type(sources).__name__}",
        value=repr(sources)[:200],
    )


def check_encodable(source: str, parameter: str) -> str:
    """``source`` if it can be written as UTF-8 for the compiler; else a SpecError naming where.

    Only a lone surrogate (half of a UTF-16 pair, e.g. from ``"\\ud800"`` or text decoded
    with ``surrogateescape``) cannot be encoded.
    """
    try:
        source.encode("utf-8")
    except UnicodeEncodeError as exc:
        line = source.count("\n", 0, exc.start) + 1
        column = exc.start - (source.rfind("\n", 0, exc.start) + 1) + 1
        char = source[exc.start]
        raise SpecError(
            f"{parameter} has a lone surrogate U+{ord(char):04X} at line {line}, column {column} "
            f"(character {exc.start}), which cannot be written out as UTF-8 for the compiler. Remove it, "
            "or decode the text that produced it with errors='replace' instead of 'surrogateescape'.",
            value=f"U+{ord(char):04X}",
            line=line,
            column=column,
            position=exc.start,
        ) from None
    return source


def name_from_path(path: Path) -> str:
    stem = re.sub(r"[^A-Za-z0-9_]", "_", path.stem) or "module"
    return stem if stem[0].isalpha() or stem[0] == "_" else f"m_{stem}"


def read_source_file(path: str | os.PathLike[str], suffixes: Sequence[str]) -> tuple[Path, str]:
    resolved = Path(path).expanduser().resolve()
    if not resolved.is_file():
        raise SpecError(
            f"source file {str(path)!r} does not exist (resolved to {resolved}); pass the path of a "
            f"{'/'.join(suffixes)} file.",
            value=str(path),
        )
    try:
        return resolved, resolved.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read source file {resolved}: {exc}", value=str(path)) from exc


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

    A ``stream`` parameter is accepted and receives 0, so one source can serve CPU and GPU.
    """
    source = join_sources(cpp_sources, "cpp_sources")
    unit = SourceUnit(f"{name}.cpp" if isinstance(name, str) else "inline.cpp", source, None, ".cpp")
    options = LoadOptions(
        name=name,
        functions=functions,
        extra_cflags=as_flags(extra_cflags, "extra_cflags"),
        extra_ldflags=as_flags(extra_ldflags, "extra_ldflags"),
        extra_include_paths=as_flags(extra_include_paths, "extra_include_paths"),
        build_directory=build_directory,
        verbose=verbose,
        force_rebuild=force_rebuild,
        replace=replace,
        auto_register=auto_register,
        target_prefix=target_prefix,
        optimization_level=optimization_level,
        use_fast_math=use_fast_math,
    )
    return load_module([unit], options, CpuBackend())


def load_cpp_file(
    path: str | os.PathLike[str], functions: Any = None, *, name: str | None = None, **kwargs: Any
) -> CompiledModule:
    """Compile a C++ file; ``name`` defaults to the file's stem. Other keywords as ``load_cpp_inline``.

    The file's directory is on the include path, and the project headers it includes
    (transitively) are part of the cache key.
    """
    resolved, text = read_source_file(path, (".cpp", ".cc", ".cxx"))
    module_name = name if name is not None else name_from_path(resolved)
    unit = SourceUnit(str(resolved), text, resolved.parent, ".cpp")
    allowed = set(load_cpp_inline.__kwdefaults__ or {})
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise TypeError(
            f"load_cpp_file() got unexpected keyword argument(s) {unknown}; accepted: {sorted(allowed)}"
        )
    options = LoadOptions(name=module_name, functions=functions)
    for key, value in kwargs.items():
        if key in ("extra_cflags", "extra_ldflags", "extra_include_paths"):
            value = as_flags(value, key)
        setattr(options, key, value)
    return load_module([unit], options, CpuBackend())
