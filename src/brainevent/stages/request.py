"""What a load asks for: the source units (inline text, one file, a directory's files), the
options (checked once, by ``load_options.make_options``, when the request is made) and the
platform.
"""

# Not `from __future__ import annotations`: a NamedTuple compiles string annotations (docs/architecture.md).
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

from ..errors import SpecError
from ..load_options import CUDA, LoadOptions, SourceUnit, check_keywords, make_options
from ..platform_table import BUILD_PLATFORMS, C_SUFFIXES, HOST_PLATFORM, UNIT_SUFFIXES

if TYPE_CHECKING:
    from ..platforms.base import Platform

# The raw ``functions`` argument of a loader: a {name: tokens} mapping, a list of names,
# or None (annotations decide). It is read only on a cache miss (spec/resolve.py).
FunctionsArgument: TypeAlias = Mapping[str, Any] | Sequence[str] | None


class LoadRequest(NamedTuple):
    """One load: its source units, the raw ``functions`` argument, the checked options, the platform."""

    units: tuple[SourceUnit, ...]
    functions: FunctionsArgument
    options: LoadOptions
    platform: "Platform"


def inline_unit(name: object, sources: str | Sequence[str], parameter: str, suffix: str) -> SourceUnit:
    """Inline source (a list of strings is joined), shown to the compiler as ``<name><suffix>``."""
    text = join_sources(sources, parameter)
    return SourceUnit(f"{name}{suffix}" if isinstance(name, str) else f"inline{suffix}", text, None, suffix)


def file_unit(path: str | os.PathLike[str], suffixes: Sequence[str]) -> SourceUnit:
    """One file (one of ``suffixes``), with its directory on the include path."""
    resolved, text = read_source_file(path, suffixes)
    return SourceUnit(str(resolved), text, resolved.parent, unit_suffix(resolved))


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
    """``source`` if it can be written as UTF-8 (no lone surrogate); else a SpecError naming where."""
    try:
        source.encode("utf-8")
    except UnicodeEncodeError as exc:
        line = source.count("\n", 0, exc.start) + 1
        column = exc.start - (source.rfind("\n", 0, exc.start) + 1) + 1
        char = f"U+{ord(source[exc.start]):04X}"
        message = (
            f"{parameter} has a lone surrogate {char} at line {line}, column {column} "
            f"(character {exc.start}), which cannot be written out as UTF-8 for the compiler. Remove it, "
            "or decode the text that produced it with errors='replace' instead of 'surrogateescape'."
        )
        raise SpecError(message, value=char, line=line, column=column, position=exc.start) from None
    return source


# Which compiler a file's suffix picks (the platform table): CUDA for .cu, C for .c, C++ for the rest.
CPP_SUFFIXES = BUILD_PLATFORMS[HOST_PLATFORM].suffixes
# The files each platform's file and directory loaders take: its own, then C++ and C.
SUFFIXES = {
    build: tuple(dict.fromkeys((*p.suffixes, *CPP_SUFFIXES, *C_SUFFIXES)))
    for build, p in BUILD_PLATFORMS.items()
}


def unit_suffix(file: Path) -> str:
    """The unit suffix (".cu", ".c" or ".cpp") a file is compiled as."""
    return UNIT_SUFFIXES.get(file.suffix, CPP_SUFFIXES[0])


def refuse_c_only(units: Sequence[SourceUnit], caller: str) -> None:
    """Entry points take ``BE::Tensor``, a C++ type: refuse C files alone before building."""
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
    """A module name (a C identifier) from a file's stem; a non-ASCII stem also gets a digest
    of its spelling, so ``kä.cpp`` and ``kö.cpp`` do not share one."""
    original = path.stem
    stem = re.sub(r"[^A-Za-z0-9_]", "_", original) or "module"
    if not original.isascii():
        import hashlib

        raw = os.fsencode(original)  # undecodable bytes too (surrogate escapes)
        stem = f"{stem}_{hashlib.sha256(raw).hexdigest()[:8]}"
    return stem if stem[0].isalpha() or stem[0] == "_" else f"m_{stem}"


def read_source_file(path: str | os.PathLike[str], suffixes: Sequence[str]) -> tuple[Path, str]:
    resolved = Path(path).expanduser().resolve()
    try:  # its name is written in #line directives, the build file and the manifest
        str(resolved).encode("utf-8")
    except UnicodeEncodeError:
        raw = os.fsencode(resolved)
        raise SpecError(
            f"source file {raw!r} has a name that is not valid UTF-8, which the generated code and "
            "the compiler's records cannot name. Rename the file (or its directory) to a UTF-8 name.",
            value=repr(raw),
        ) from None
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


def make_request(
    platform: str, units: Sequence[SourceUnit], name: Any, functions: Any, keywords: Mapping[str, Any]
) -> LoadRequest:
    """A request to build ``units`` for ``platform``; the options are checked before the
    platform looks for its toolchain, so bad arguments are reported first."""
    from ..platforms import create

    options = make_options(name, keywords, platform)
    arguments = {"compute_capability": options.compute_capability} if platform == CUDA else {}
    return LoadRequest(tuple(units), functions, options, create(platform, **arguments))


def paths_request(
    platform: str,
    caller: str,
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    functions: Any,
    name: str | None,
    kwargs: Mapping[str, Any],
    *,
    directory: bool = False,
) -> LoadRequest:
    """The request of a file loader (one path or a list of them), or of a directory loader;
    ``name`` defaults to the first file's stem, or the directory's name."""
    if directory:
        folder, units = dir_units(path, SUFFIXES[platform], caller)  # type: ignore[arg-type]
    else:
        paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
        units = [file_unit(p, SUFFIXES[platform]) for p in paths]
        folder = Path(units[0].display_name)  # its stem names the module
    refuse_c_only(units, caller)
    keywords = check_keywords(caller, kwargs, platform)
    module_name = name if name is not None else name_from_path(folder)
    return make_request(platform, units, module_name, functions, keywords)


def dir_units(
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
    units = [SourceUnit(str(f), read_source_file(f, suffixes)[1], directory, unit_suffix(f)) for f in files]
    return directory, units
