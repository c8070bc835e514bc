"""What a load asks for: the source units (inline text, one file, a directory's files), the
checked options and the platform.

Every option is checked here, once, when the request is made; the later stages trust it.
The values are records (``brainevent.records``: plain classes with ``__slots__``) rather
than NamedTuples or dataclasses: a cache hit imports this module, and creating one of those
classes costs ten times as much.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import SpecError
from ..platforms.devices import BUILD_PLATFORMS, HOST_PLATFORM, UNIT_SUFFIXES
from ..records import Record

if TYPE_CHECKING:
    from typing import TypeAlias

    from ..platforms.protocol import Platform

    # The raw ``functions`` argument of a loader: a {name: tokens} mapping, a list of names,
    # or None (annotations decide). It is read only on a cache miss (spec/resolve.py).
    FunctionsArgument: TypeAlias = Mapping[str, Any] | Sequence[str] | None


def _is_module_name(value: str) -> bool:
    """``[A-Za-z_][A-Za-z0-9_]*`` words joined by single dots or dashes; checked without a
    regular expression, whose compilation would cost the first cache hit more than the check."""
    if not value.isascii() or not (value[:1].isalpha() or value[:1] == "_"):
        return False
    words = value.replace("-", ".").split(".")
    return all(word and word.replace("_", "a").isalnum() for word in words)


class SourceUnit(Record):
    """One translation unit: inline text (``directory`` None) or a file's contents."""

    __slots__ = _fields = ("display_name", "text", "directory", "suffix")

    def __init__(self, display_name: str, text: str, directory: Path | None, suffix: str) -> None:
        self.display_name = display_name  # what diagnostics and __FILE__ show: "<name>.cpp" or a path
        self.text = text
        self.directory = directory
        self.suffix = suffix  # ".cpp", ".cu" or ".c": decides the compiler and the language


class LoadOptions(Record):
    """The loaders' keyword options, checked. Build them with :func:`make_options`."""

    __slots__ = _fields = (
        "name",
        "extra_cflags",
        "extra_ldflags",
        "extra_include_paths",
        "build_directory",
        "verbose",
        "force_rebuild",
        "auto_register",
        "target_prefix",
        "optimization_level",
        "use_fast_math",
        "ninja_workers",
        "allow_cuda_graph",
        "replace",
        "extra_libraries",
        "openmp",
    )

    def __init__(
        self,
        name: str,
        extra_cflags: tuple[str, ...] = (),
        extra_ldflags: tuple[str, ...] = (),
        extra_include_paths: tuple[str, ...] = (),
        build_directory: str | None = None,
        verbose: bool = False,
        force_rebuild: bool = False,
        auto_register: bool = True,
        target_prefix: str | None = None,
        optimization_level: int = 3,
        use_fast_math: bool = False,
        ninja_workers: int | None = None,
        allow_cuda_graph: bool = True,
        replace: bool = False,
        extra_libraries: tuple[str, ...] = (),
        openmp: bool = False,
    ) -> None:
        self.name = name
        self.extra_cflags = extra_cflags
        self.extra_ldflags = extra_ldflags
        self.extra_include_paths = extra_include_paths
        self.build_directory = build_directory
        self.verbose = verbose
        self.force_rebuild = force_rebuild
        self.auto_register = auto_register
        self.target_prefix = target_prefix
        self.optimization_level = optimization_level
        self.use_fast_math = use_fast_math
        self.ninja_workers = ninja_workers
        self.allow_cuda_graph = allow_cuda_graph
        self.replace = replace  # let this module take over targets another module registered
        # NVIDIA libraries to compile and link against, found by cuda-pathfinder (toolchain/nvidia_libs.py)
        self.extra_libraries = extra_libraries
        self.openmp = openmp  # compile and link with the host compiler's OpenMP (see openmp_options)


class LoadRequest(Record):
    __slots__ = _fields = ("units", "functions", "options", "platform")

    def __init__(
        self,
        units: tuple[SourceUnit, ...],
        functions: FunctionsArgument,
        options: LoadOptions,
        platform: Platform,
    ) -> None:
        self.units = units
        self.functions = functions
        self.options = options
        self.platform = platform


_FLAG_OPTIONS = ("extra_cflags", "extra_ldflags", "extra_include_paths")


def make_options(
    name: Any, keywords: Mapping[str, Any], *, labels: Mapping[str, str] | None = None
) -> LoadOptions:
    """Checked options from a loader's keywords (a flag list of None is no flags).

    ``labels`` names an option as its loader spells it (``extra_cflags`` is
    ``extra_cuda_cflags`` for CUDA), so errors name what the caller wrote.
    """
    labels = labels or {}
    values = dict(keywords)
    for key in _FLAG_OPTIONS:
        values[key] = as_flags(keywords.get(key), labels.get(key, key))
    if keywords.get("extra_libraries") is not None:
        values["extra_libraries"] = _library_names(keywords["extra_libraries"])
    options = openmp_options(LoadOptions(name=name, **values))
    check_options(options)
    return options


def _library_names(value: Any) -> tuple[str, ...]:
    from ..toolchain.nvidia_libs import check_names  # imports cuda.pathfinder: only when asked

    return check_names(value)


# The spellings of "use OpenMP" a user may already write in the flag lists: each becomes
# openmp=True (and leaves the list), so both ways build, and key, the same module.
_OPENMP_FLAGS = frozenset({"-fopenmp", "-Xcompiler=-fopenmp", "--compiler-options=-fopenmp", "-lgomp"})


def openmp_options(options: LoadOptions) -> LoadOptions:
    """``options`` with any OpenMP flag of the flag lists turned into ``openmp=True``."""
    if not isinstance(options.openmp, bool):
        raise SpecError(f"openmp={options.openmp!r} must be True or False.", value=options.openmp)
    found = [f for f in (*options.extra_cflags, *options.extra_ldflags) if f in _OPENMP_FLAGS]
    if not found:
        return options
    return options.copy_with(
        openmp=True,
        extra_cflags=tuple(f for f in options.extra_cflags if f not in _OPENMP_FLAGS),
        extra_ldflags=tuple(f for f in options.extra_ldflags if f not in _OPENMP_FLAGS),
    )


def keyword_options(caller: str, kwargs: Mapping[str, Any], accepted: Sequence[str]) -> dict[str, Any]:
    """``kwargs`` of a file or directory loader, refused (TypeError) if any is not ``accepted``."""
    unknown = sorted(set(kwargs) - set(accepted))
    if unknown:
        raise TypeError(
            f"{caller}() got unexpected keyword argument(s) {unknown}; accepted: {sorted(accepted)}"
        )
    return dict(kwargs)


def check_name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _is_module_name(value) or len(value) > 100:
        raise SpecError(
            f"{what} {value!r} is not a valid module name: use letters, digits and '_' "
            "(dots and dashes between them), starting with a letter, at most 100 characters, "
            "e.g. 'my_kernels'.",
            value=value,
        )
    return value


def as_flags(value: Any, label: str) -> tuple[str, ...]:
    """A list of flags as a tuple; a bare string is refused (it would split into characters)."""
    if value is None:
        return ()
    from ..spec.names import is_string_list  # only when flags are given: most loads pass none

    if not is_string_list(value):
        raise SpecError(f'{label}={value!r} must be a list of strings, e.g. ["-DFOO=1"].', value=value)
    for flag in value:
        problem = _flag_problem(flag)
        if problem is not None:
            raise SpecError(
                f"{label} entry {flag!r} {problem}; a compiler command line cannot carry it. "
                "Give each flag as its own list item, without line breaks.",
                value=flag,
            )
    return tuple(value)


def _flag_problem(flag: str) -> str | None:
    if "\n" in flag or "\r" in flag:
        return "contains a line break"
    if "\0" in flag:
        return "contains a NUL character"
    try:
        flag.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"contains {flag[exc.start]!r}, a lone surrogate, at position {exc.start}"
    return None


def check_options(options: LoadOptions) -> None:
    check_name(options.name, "name")
    if options.target_prefix is not None:
        check_name(options.target_prefix, "target_prefix")
    level = options.optimization_level
    if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= 3:
        raise SpecError(
            f"optimization_level={level!r} is not valid: expected an int 0, 1, 2 or 3 (-O0..-O3).",
            value=level,
        )
    if options.ninja_workers is not None and (
        not isinstance(options.ninja_workers, int) or options.ninja_workers < 1
    ):
        raise SpecError(
            f"ninja_workers={options.ninja_workers!r} must be a positive int or None (all CPUs).",
            value=options.ninja_workers,
        )
    if not isinstance(options.replace, bool):
        raise SpecError(f"replace={options.replace!r} must be True or False.", value=options.replace)


def inline_unit(name: object, sources: str | Sequence[str], parameter: str, suffix: str) -> SourceUnit:
    """Inline source (a list of strings is joined), shown to the compiler as ``<name><suffix>``."""
    text = join_sources(sources, parameter)
    return SourceUnit(f"{name}{suffix}" if isinstance(name, str) else f"inline{suffix}", text, None, suffix)


def file_unit(path: str | os.PathLike[str], suffixes: Sequence[str], suffix: str) -> SourceUnit:
    """One file, compiled as a ``suffix`` unit with its directory on the include path."""
    resolved, text = read_source_file(path, suffixes)
    return SourceUnit(str(resolved), text, resolved.parent, suffix)


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


# Which compiler a file's suffix picks (the platform table): CUDA for .cu, C for .c, C++ for the rest.
CPP_SUFFIXES = BUILD_PLATFORMS[HOST_PLATFORM].suffixes


def unit_suffix(file: Path) -> str:
    """The unit suffix (".cu", ".c" or ".cpp") a file is compiled as."""
    return UNIT_SUFFIXES.get(file.suffix, CPP_SUFFIXES[0])


def refuse_c_only(units: Sequence[SourceUnit], caller: str) -> None:
    """A module made of C files alone has nowhere to put its entry points (they take
    ``BE::Tensor``, a C++ type): say so before anything is built."""
    if units and all(u.suffix == ".c" for u in units):
        names = ", ".join(u.display_name for u in units)
        raise SpecError(
            f"{caller}: {names} {'is' if len(units) == 1 else 'are'} C, and entry points take "
            "BE::Tensor, a C++ type. Keep the C file as it is and add a .cpp file whose entry points "
            'call it (declared extern "C"), then load both: load_cpp_dir(folder) or '
            "load_cpp_file([c_file, cpp_file]).",
            value=names,
        )


def name_from_path(path: Path) -> str:
    """A module name (a C identifier) from a file's stem.

    Every non-ASCII character maps to ``_``, which would give ``kä.cpp`` and ``kö.cpp`` one
    module name (one set of FFI targets, one bundle directory): a stem with any non-ASCII
    character therefore also gets a digest of its original spelling.
    """
    original = path.stem
    stem = re.sub(r"[^A-Za-z0-9_]", "_", original) or "module"
    if not original.isascii():
        import hashlib

        raw = os.fsencode(original)  # undecodable bytes too (surrogate escapes)
        stem = f"{stem}_{hashlib.sha256(raw).hexdigest()[:8]}"
    return stem if stem[0].isalpha() or stem[0] == "_" else f"m_{stem}"


def check_path_encodable(path: Path) -> Path:
    """``path`` if its name can be written as UTF-8 (into ``#line`` directives, the build file
    and the manifest); else a SpecError naming it. Only a name of bytes that are not UTF-8
    (which Python holds as lone surrogates) fails."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raw = os.fsencode(path)
        raise SpecError(
            f"source file {raw!r} has a name that is not valid UTF-8, which the generated code and "
            "the compiler's records cannot name. Rename the file (or its directory) to a UTF-8 name.",
            value=repr(raw),
        ) from None
    return path


def read_source_file(path: str | os.PathLike[str], suffixes: Sequence[str]) -> tuple[Path, str]:
    resolved = check_path_encodable(Path(path).expanduser().resolve())
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


def file_request_parts(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    unit_of: Callable[[str | os.PathLike[str]], SourceUnit],
    caller: str,
    kwargs: Mapping[str, Any],
    accepted: Sequence[str],
    name: str | None,
) -> tuple[list[SourceUnit], str, dict[str, Any]]:
    """What a file loader (one path or a list of them) builds its request from: the units,
    the module name (the first file's stem unless given) and the checked keywords."""
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    units = [unit_of(p) for p in paths]
    refuse_c_only(units, caller)
    keywords = keyword_options(caller, kwargs, accepted)
    module_name = name if name is not None else name_from_path(Path(units[0].display_name))
    return units, module_name, keywords
