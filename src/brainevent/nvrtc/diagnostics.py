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


def _where(found: re.Match[str], program_name: str, source: str, display_name: str) -> str:
    """``<file>, line <n>: <error>``, then the offending line with one line on each side."""
    file, number = found.group("file"), int(found.group("line"))
    where = f"{display_name if file == program_name else file}, line {number}: {found['kind']}{found['rest']}"
    try:
        lines = (source if file == program_name else Path(file).read_text(errors="replace")).splitlines()
    except OSError:
        return where
    if not 1 <= number <= len(lines):
        return where
    first, last = max(number - 1, 1), min(number + 1, len(lines))
    width = len(str(last))
    quoted = (
        f"  {'>' if n == number else ' '} {n:>{width}} | {lines[n - 1]}" for n in range(first, last + 1)
    )
    return where + "\n" + "\n".join(quoted)


def compile_error(
    log: str, source: str, program_name: str, display_name: str, arch: str, kernel: str
) -> CompileError:
    """The error for a failed compile of ``source`` (``display_name`` is how the user knows it:
    their file's path, or "the inline source")."""
    found = next((m for raw in log.splitlines() if (m := _PLACE.match(raw.strip()))), None)
    if found is not None:
        first = _where(found, program_name, source, display_name)
    else:
        first = (log.strip().splitlines() or ["(NVRTC gave no log)"])[0]
    message = (
        f"NVRTC could not compile {display_name} for {arch} (kernel {kernel!r}):\n{first}\n\n"
        f"NVRTC's log:\n{log.rstrip()}"
    )
    return CompileError(message, log=log, first_error=first, kernel=kernel, backend="nvrtc", platform="cuda")
