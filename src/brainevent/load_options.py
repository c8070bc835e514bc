"""The loaders' options, declared once: ``OPTIONS`` has one row per keyword.

A row says how the keyword is checked, its default, what it keys (a cache entry, a bundle,
``cache prune``'s builds), which platforms take it and its ``brainevent build`` flag;
``LoadOptions``, the keyword check, the key parts and the CLI flags derive from it
(docs/architecture.md, "Adding a loader option"). ``SourceUnit`` lives here too.
"""

# Not `from __future__ import annotations`: a NamedTuple compiles string annotations (docs/architecture.md).
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .config import DEBUG
from .errors import SpecError
from .platform_table import BUILD_PLATFORMS, CUDA_PLATFORM, HOST_PLATFORM

if TYPE_CHECKING:
    import argparse

CPU, CUDA = HOST_PLATFORM, CUDA_PLATFORM  # the build platforms the options table names


class SourceUnit(NamedTuple):
    """One translation unit: inline text (``directory`` None) or a file's contents."""

    display_name: str  # what diagnostics and __FILE__ show: "<name>.cpp" or a path
    text: str
    directory: Path | None
    suffix: str  # ".cpp", ".cu" or ".c": decides the compiler and the language


class Option(NamedTuple):
    """One row of ``OPTIONS`` (``field`` and ``record`` filled in by :func:`_filled`)."""

    name: str  # the keyword, as the loaders spell it
    check: Callable[[Any, str], Any]  # (value, keyword) -> the checked value; a SpecError names a bad one
    default: Any  # the loaders' default
    # What it keys: "cache" (a cache entry), "bundle" (a bundled build), "variant" (entries
    # that differ in it are different builds, not versions of one: `cache prune` keeps each).
    keys: tuple[str, ...] = ()
    platforms: tuple[str, ...] = (CPU, CUDA)  # the loaders that take it
    cli: tuple[str, ...] = ()  # the `brainevent build` flags that set it
    field: str = ""  # the LoadOptions field it fills (default: the name)
    record: str = ""  # the key record's entry that holds it (default: the field)


def _filled(row: Option) -> Option:
    field = row.field or row.name
    return row._replace(field=field, record=row.record or field)


def _any(value: Any, keyword: str) -> Any:
    return value


def _bool(value: Any, keyword: str) -> bool:
    if not isinstance(value, bool):
        raise SpecError(f"{keyword}={value!r} must be True or False.", value=value)
    return value


def check_name(value: Any, keyword: str) -> str:
    if not isinstance(value, str) or not _is_module_name(value) or len(value) > 100:
        raise SpecError(
            f"{keyword} {value!r} is not a valid module name: use letters, digits and '_' "
            "(dots and dashes between them), starting with a letter, at most 100 characters, "
            "e.g. 'my_kernels'.",
            value=value,
        )
    return value


def _is_module_name(value: str) -> bool:
    """``[A-Za-z_][A-Za-z0-9_]*`` words joined by dots or dashes (no regex: a hit would compile it)."""
    if not value.isascii() or not (value[:1].isalpha() or value[:1] == "_"):
        return False
    words = value.replace("-", ".").split(".")
    return all(word and word.replace("_", "a").isalnum() for word in words)


def _prefix(value: Any, keyword: str) -> str | None:
    return None if value is None else check_name(value, keyword)


def _level(value: Any, keyword: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 3:
        raise SpecError(
            f"{keyword}={value!r} is not valid: expected an int 0, 1, 2 or 3 (-O0..-O3).", value=value
        )
    return value


def _workers(value: Any, keyword: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise SpecError(f"{keyword}={value!r} must be a positive int or None (all CPUs).", value=value)
    return value


def as_flags(value: Any, keyword: str) -> tuple[str, ...]:
    """A list of flags as a tuple (None: none); a bare string or an uncarriable flag is refused."""
    if value is None:
        return ()
    from .spec.names import is_string_list  # only when flags are given: most loads pass none

    if not is_string_list(value):
        raise SpecError(f'{keyword}={value!r} must be a list of strings, e.g. ["-DFOO=1"].', value=value)
    for flag in value:
        problem = _flag_problem(flag)
        if problem is not None:
            raise SpecError(
                f"{keyword} entry {flag!r} {problem}; a compiler command line cannot carry it. "
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


def _libraries(value: Any, keyword: str) -> tuple[str, ...]:
    if value is None:
        return ()
    from .toolchain.nvidia_libs import check_names  # imports cuda.pathfinder: only when asked

    return check_names(value)


# Debug builds (``debug=True``, or BRAINEVENT_DEBUG=1 for every load) add each platform's debug
# flags (-DBE_DEBUG=1, -g or -lineinfo, -O0...); the flags key the cache, so debug and release
# builds live side by side.
DEBUG_FLAGS = {build: p.debug_flags for build, p in BUILD_PLATFORMS.items()}


def _debug(value: Any, keyword: str) -> bool:
    if value is None:
        return DEBUG.get()
    if not isinstance(value, bool):
        raise SpecError(
            f"debug={value!r} must be True, False or None (None: read {DEBUG.name}).", value=value
        )
    return value


# A keyed option's record entry is its field, except `archs`: the CUDA platform resolves
# compute_capability and records the archs itself (a bundle checks them apart).
# extra_include_paths keys no bundle: a package computes them, absolute, from __file__.
# debug keys through what it changes (extra_cflags, optimization_level).
ALL = ("cache", "bundle", "variant")
_ROWS = (
    Option("name", check_name, None, keys=("cache", "bundle")),
    Option("extra_cflags", as_flags, None, keys=ALL, platforms=(CPU,)),
    Option("extra_cuda_cflags", as_flags, None, keys=ALL, platforms=(CUDA,), field="extra_cflags"),
    Option("extra_ldflags", as_flags, None, keys=ALL),
    Option("extra_include_paths", as_flags, None, keys=("cache", "variant")),
    Option("build_directory", _any, None),
    Option("verbose", _bool, False),
    Option(
        "compute_capability",
        _any,
        None,
        keys=("cache", "variant"),
        record="archs",
        platforms=(CUDA,),
        cli=("--arch",),
    ),
    Option("force_rebuild", _bool, False),
    Option("replace", _bool, False),
    Option("auto_register", _bool, True),
    Option("target_prefix", _prefix, None),
    Option("ninja_workers", _workers, None, platforms=(CUDA,)),
    Option("optimization_level", _level, 3, keys=ALL, cli=("-O", "--optimization-level")),
    Option("use_fast_math", _bool, False, keys=ALL, cli=("--use-fast-math",)),
    Option("allow_cuda_graph", _bool, True, platforms=(CUDA,)),
    Option("extra_libraries", _libraries, None, keys=ALL, cli=("--extra-library",)),
    Option("openmp", _bool, False, keys=ALL, cli=("--openmp",)),
    Option("debug", _debug, None),
)
OPTIONS = tuple(map(_filled, _ROWS))

BUNDLE_KEYED = tuple(dict.fromkeys(o.record for o in OPTIONS if "bundle" in o.keys))
VARIANT_KEYED = tuple(dict.fromkeys(o.record for o in OPTIONS if "variant" in o.keys))


def variant_of(record: Mapping[str, Any]) -> dict[str, Any]:
    """What tells a module's builds apart in its key record (a manifest's ``variant``, read by
    `cache prune`): ``functions=`` and the variant rows; the rest (sources, compiler, version)
    makes versions of one build. An input left empty counts as absent."""
    return {k: record.get(k) or None for k in ("functions", *VARIANT_KEYED)}


CLI_HELP = {
    "compute_capability": "CUDA arch, e.g. sm_80 (repeatable)",
    "extra_libraries": "an NVIDIA library to link, e.g. cublas (repeatable)",
    "openmp": "compile and link with OpenMP (-fopenmp)",
}


def keywords_of(platform: str) -> tuple[str, ...]:
    """The keywords the loaders of ``platform`` take (``name`` among them)."""
    return tuple(o.name for o in OPTIONS if platform in o.platforms)


class LoadOptions(NamedTuple):
    """The loaders' options, checked: one field per ``OPTIONS`` field, made by
    :func:`make_options` (a test holds the fields to the table)."""

    name: str
    extra_cflags: tuple[str, ...]
    extra_ldflags: tuple[str, ...]
    extra_include_paths: tuple[str, ...]
    build_directory: str | None
    verbose: bool
    compute_capability: Any  # the CUDA platform resolves it
    force_rebuild: bool
    replace: bool
    auto_register: bool
    target_prefix: str | None
    ninja_workers: int | None
    optimization_level: int
    use_fast_math: bool
    allow_cuda_graph: bool
    extra_libraries: tuple[str, ...]
    openmp: bool
    debug: bool


def check_keywords(caller: str, kwargs: Mapping[str, Any], platform: str) -> dict[str, Any]:
    """``kwargs`` of a file or directory loader, refused (TypeError) if any is not the platform's."""
    accepted = keywords_of(platform)
    unknown = sorted(set(kwargs) - set(accepted))
    if unknown:
        raise TypeError(
            f"{caller}() got unexpected keyword argument(s) {unknown}; accepted: {sorted(accepted)}"
        )
    return dict(kwargs)


# The spellings of "use OpenMP" a user may already write in the flag lists: each becomes
# openmp=True (and leaves the list), so both ways build, and key, the same module.
_OPENMP_FLAGS = frozenset({"-fopenmp", "-Xcompiler=-fopenmp", "--compiler-options=-fopenmp", "-lgomp"})


def make_options(name: Any, keywords: Mapping[str, Any], platform: str = CPU) -> LoadOptions:
    """Checked options from a loader's keywords; an option not given takes its default."""
    values: dict[str, Any] = {}
    for option in OPTIONS:
        if platform in option.platforms:
            raw = name if option.name == "name" else keywords.get(option.name, option.default)
            values[option.field] = option.check(raw, option.name)
    for option in OPTIONS:  # what the other platform's loaders take (a CPU module has no archs)
        values.setdefault(option.field, option.default)
    if values["debug"]:
        values["extra_cflags"] = (*values["extra_cflags"], *DEBUG_FLAGS[platform])
        values["optimization_level"] = 0
    if platform == CUDA and "cudart" in values["extra_libraries"]:
        # nvcc links the CUDA runtime statically into every CUDA module: a shared copy would
        # give the module two runtimes with separate state.
        raise SpecError(
            "extra_libraries entry 'cudart': a CUDA module already has the CUDA runtime (nvcc links it "
            "statically) and its headers; remove 'cudart' from extra_libraries.",
            value="cudart",
        )
    for field in ("extra_cflags", "extra_ldflags"):
        if any(f in _OPENMP_FLAGS for f in values[field]):
            values["openmp"] = True
            values[field] = tuple(f for f in values[field] if f not in _OPENMP_FLAGS)
    return LoadOptions(**values)


def key_record(options: LoadOptions) -> dict[str, Any]:
    """The options' entries of a cache key's record (the platform records ``archs``)."""
    return {
        o.record: list(v) if isinstance(v := getattr(options, o.field), tuple) else v
        for o in OPTIONS
        if "cache" in o.keys and o.record == o.field
    }


def add_cli_flags(parser: "argparse.ArgumentParser") -> None:
    """The table's ``brainevent build`` flags; each stores under its option's name."""
    for o in OPTIONS:
        if not o.cli:
            continue
        if isinstance(o.default, bool):
            kind: dict[str, Any] = {"action": "store_true"}
        elif isinstance(o.default, int):
            kind = {"type": int, "default": o.default}
        else:
            kind = {"action": "append", "metavar": o.name.upper()}
        parser.add_argument(*o.cli, dest=o.name, help=CLI_HELP.get(o.name), **kind)


def cli_keywords(args: "argparse.Namespace", platform: str) -> dict[str, Any]:
    """The loader keywords the CLI flags of ``platform`` gave."""
    return {o.name: getattr(args, o.name) for o in OPTIONS if o.cli and platform in o.platforms}
