"""Finds Markdown tables that would not render as written (standard library only).

Shared by tests/docs/test_docs_tables.py and the nox ``docs`` session. A table is a header row,
a delimiter row (``|---|---|``) and body rows, each starting and ending with ``|``.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*(```|~~~)")
_DELIMITER = re.compile(r"^\|(\s*:?-+:?\s*\|)+$")


def _is_row(line: str) -> bool:
    stripped = line.strip()
    return len(stripped) > 1 and stripped.startswith("|") and stripped.endswith("|")


def _cells(line: str) -> int:
    """Cells as GitHub counts them: every unescaped pipe separates, code spans included."""
    return len(re.split(r"(?<!\\)\|", line.strip()[1:-1]))


def _pipe_in_code_span(line: str) -> bool:
    return any(re.search(r"(?<!\\)\|", span) for span in re.findall(r"`[^`]*`", line))


def table_problems(text: str, name: str) -> list[str]:
    """What would make a table of this Markdown render other than as written."""
    lines = text.splitlines()
    problems: list[str] = []
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            in_fence = not in_fence
            i += 1
            continue
        if in_fence:
            i += 1
            continue
        if _is_row(line) and i + 1 < len(lines) and _DELIMITER.match(lines[i + 1].strip()):
            width = _cells(line)
            if _cells(lines[i + 1]) != width:
                problems.append(
                    f"{name}:{i + 2}: the delimiter row has {_cells(lines[i + 1])} cells, the header {width}"
                )
            j = i + 2
            while j < len(lines) and _is_row(lines[j]):
                if _cells(lines[j]) != width:
                    problems.append(f"{name}:{j + 1}: {_cells(lines[j])} cells in a table of {width} columns")
                j += 1
            for k in range(i, j):
                if _pipe_in_code_span(lines[k]):
                    problems.append(
                        f"{name}:{k + 1}: a | inside a code span splits the cell on GitHub: write \\|"
                    )
            if j < len(lines) and lines[j].strip():
                problems.append(
                    f"{name}:{j + 1}: text right after a table (line {j}) renders as a table row: "
                    "leave a blank line after the table"
                )
            i = j
            continue
        if _is_row(line):
            problems.append(f"{name}:{i + 1}: a table row outside a table (is the |---| row missing?)")
        i += 1
    return problems
