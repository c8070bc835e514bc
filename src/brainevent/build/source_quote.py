"""Quote the user's source line a compiler error points at.

Inline sources are compiled under a virtual name (``#line 1 "mod.cpp"``), so the compiler
cannot show the line itself; nvcc never does. The quote comes from the text brainevent
compiled: the offending line and the one before it (where a missing ``;`` usually is).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["QuotedSource", "quote_error_line"]

# g++/clang: "file:7:5: error: ..."; nvcc: "file(7): error: ...".
_GCC = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?:\d+:)? (?:fatal )?error")
_NVCC = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\): (?:catastrophic )?error")


class QuotedSource:
    """One source the build compiled: its display name, text and whether it was inline."""

    __slots__ = ("inline", "name", "text")

    def __init__(self, name: str, text: str, inline: bool) -> None:
        self.name, self.text, self.inline = name, text, inline


def quote_error_line(error_line: str, sources: Sequence[QuotedSource]) -> str:
    """The lines around ``error_line``'s location, numbered, or "" when it is not in ``sources``."""
    match = _GCC.match(error_line) or _NVCC.match(error_line)
    if match is None:
        return ""
    source = next((s for s in sources if s.name == match.group("file")), None)
    if source is None:
        return ""
    number = int(match.group("line"))
    lines = source.text.splitlines()
    if not 1 <= number <= len(lines):
        return ""
    where = "the inline source" if source.inline else source.name
    width = len(str(number))
    shown = []
    for n in range(max(1, number - 1), number + 1):
        mark = ">" if n == number else " "
        shown.append(f"  {mark} {n:>{width}} | {lines[n - 1]}")
    return f"line {number} of {where}:\n" + "\n".join(shown)
