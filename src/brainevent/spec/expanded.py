"""Read function signatures after macro expansion: functions written through a macro
(``#define GEN(S, T) void gen##S(...)`` then ``GEN(_f32, float)``) exist only in the compiler's
``-E`` output. Each is reported at the line of the user's file it came from (for a generated
function, the macro's use), found through the line markers (``# 12 "file" ...``).
"""

from __future__ import annotations

import codecs
import dataclasses
import re

from brainevent.spec.cxx_lexer import lex
from brainevent.spec.signature import CxxSignature, scan_functions


def expanded_functions(preprocessed: str, file_name: str) -> list[CxxSignature]:
    """The namespace-scope functions of ``file_name`` in its preprocessed text; lines from
    included headers are blanked first, so only the source's own declarations count."""
    kept, origin = _own_lines(preprocessed, file_name)
    found = scan_functions(lex("\n".join(kept)), file_name)
    return [_relocate(sig, origin) for sig in found]


def _own_lines(preprocessed: str, file_name: str) -> tuple[list[str], list[int]]:
    """The text with other files' lines blanked, and each line's number in ``file_name``
    (0 where the line is not from it); both indexed by preprocessed line - 1."""
    kept: list[str] = []
    origin: list[int] = []
    current, line = "", 0
    for text in preprocessed.split("\n"):
        marker = _line_marker(text)
        if marker is not None:
            line, current = marker[0], marker[1] if marker[1] is not None else current
        ours = marker is None and current == file_name
        kept.append(text if ours else "")
        origin.append(line if ours else 0)
        line += marker is None  # a marker gives the next line its number
    return kept, origin


# ``# 12 "f" 2`` or ``#line 12 "f"``: the next line's number, then maybe its file (a C string).
_MARKER = re.compile(r'\s*#\s*(?:line)?\s*([0-9]+)\s*(?:"((?:[^"\\]|\\.)*))?')


def _line_marker(text: str) -> tuple[int, str | None] | None:
    """(next line's number, file or None) for a line marker, else None."""
    found = _MARKER.match(text)
    if found is None:
        return None
    if found.group(2) is None:
        return int(found.group(1)), None
    # C's escapes in the file name (\\, \" and octal) are Python's bytes escapes too.
    name = codecs.escape_decode(found.group(2).encode(), "ignore")[0]
    return int(found.group(1)), name.decode("utf-8", "replace")


def _relocate(sig: CxxSignature, origin: list[int]) -> CxxSignature:
    def mapped(line: int) -> int:
        return origin[line - 1] if 0 < line <= len(origin) else 0

    line = mapped(sig.line)
    params = tuple(dataclasses.replace(p, line=mapped(p.line) or line) for p in sig.params)
    return dataclasses.replace(sig, line=line, params=params)
