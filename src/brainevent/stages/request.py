"""What a load asks for: the source units, the checked options and the platform.

Every option is checked here, once, when the request is made; the later stages trust it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import SpecError

if TYPE_CHECKING:
    from ..platforms.base import Platform

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[.-][A-Za-z0-9_]+)*")

# The raw ``functions`` argument of a loader: a {name: tokens} mapping, a list of names, or
# None (annotations decide). It is read only on a cache miss (spec/resolve.py).
FunctionsArgument = Mapping[str, Any] | Sequence[str] | None


@dataclass(frozen=True)
class SourceUnit:
    """One translation unit: inline text (``directory`` None) or a file's contents."""

    display_name: str  # what diagnostics and __FILE__ show: "<name>.cpp" or the file's path
    text: str
    directory: Path | None
    suffix: str  # ".cpp" or ".cu": decides the compiler


@dataclass(frozen=True)
class LoadOptions:
    """The loaders' keyword options, checked. Build them with :func:`make_options`."""

    name: str
    extra_cflags: tuple[str, ...] = ()
    extra_ldflags: tuple[str, ...] = ()
    extra_include_paths: tuple[str, ...] = ()
    build_directory: str | None = None
    verbose: bool = False
    force_rebuild: bool = False
    auto_register: bool = True
    target_prefix: str | None = None
    optimization_level: int = 3
    use_fast_math: bool = False
    ninja_workers: int | None = None
    allow_cuda_graph: bool = True
    replace: bool = False  # let this module take over targets another module registered


@dataclass(frozen=True)
class LoadRequest:
    units: tuple[SourceUnit, ...]
    functions: FunctionsArgument
    options: LoadOptions
    platform: Platform


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
    options = LoadOptions(name=name, **values)
    check_options(options)
    return options


def keyword_options(caller: str, kwargs: Mapping[str, Any], accepted: Sequence[str]) -> dict[str, Any]:
    """``kwargs`` of a file or directory loader, refused (TypeError) if any is not ``accepted``."""
    unknown = sorted(set(kwargs) - set(accepted))
    if unknown:
        raise TypeError(
            f"{caller}() got unexpected keyword argument(s) {unknown}; accepted: {sorted(accepted)}"
        )
    return dict(kwargs)


def check_name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _NAME_RE.fullmatch(value) or len(value) > 100:
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
    if (
        isinstance(value, str)
        or not isinstance(value, (list, tuple))
        or not all(isinstance(v, str) for v in value)
    ):
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
