"""NVRTC's log as a :class:`CompileError` quoting the user's line: the program is named after the
user's file (or ``<inline>``), so NVRTC's ``<name>(<line>): error`` maps back to it.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import CompileError

_PLACE = re.compile(
    r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<kind>(?:catastrophic )?error|fatal error)\b(?P<rest>.*)$"
)
_CONTEXT = 1  # lines quoted on each side of the offending one


def _quote(lines: list[str], number: int) -> str:
    first, last = max(number - _CONTEXT, 1), min(number + _CONTEXT, len(lines))
    width = len(str(last))
    return "\n".join(
        f"  {'>' if n == number else ' '} {n:>{width}} | {lines[n - 1]}" for n in range(first, last + 1)
    )


def _text_of(file: str, program_name: str, source: str) -> str | None:
    if file == program_name:
        return source
    try:
        return Path(file).read_text(errors="replace")
    except OSError:
        return None


def compile_error(
    log: str, *, source: str, program_name: str, display_name: str, arch: str, kernel: str
) -> CompileError:
    """The error for a failed compile of ``source`` (``display_name`` is how the user knows it:
    their file's path, or "the inline source")."""
    where = None
    for raw in log.splitlines():
        found = _PLACE.match(raw.strip())
        if found is None:
            continue
        file, number = found.group("file"), int(found.group("line"))
        text = _text_of(file, program_name, source)
        shown = display_name if file == program_name else file
        where = f"{shown}, line {number}: {found.group('kind')}{found.group('rest')}"
        if text is not None:
            lines = text.splitlines()
            if 1 <= number <= len(lines):
                where += "\n" + _quote(lines, number)
        break
    first = where or (log.strip().splitlines() or ["(NVRTC gave no log)"])[0]
    message = (
        f"NVRTC could not compile {display_name} for {arch} (kernel {kernel!r}):\n{first}\n\n"
        f"NVRTC's log:\n{log.rstrip()}"
    )
    return CompileError(message, log=log, first_error=first, kernel=kernel, backend="nvrtc", platform="cuda")
