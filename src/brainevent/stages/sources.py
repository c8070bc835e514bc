"""The loaders' inputs as source units: inline text, one file, or a directory's files."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from ..errors import SpecError
from .request import SourceUnit


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
