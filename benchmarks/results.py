"""Result tables: targets met or not, the generated part of a results page, reading tables back.

Each benchmark row with a target gets a verdict cell such as ``met: 0.36x <= 0.4x`` or
``**not met**: per call 1.074x > 1.05x; per step 0.774x <= 1.05x``: every comparison
behind the verdict, in a fixed form that ``checks_of`` reads back (the charts are drawn from
it). Rows that only report a figure get ``-``.

A results page keeps what is written by hand around the generated block, which sits
between two HTML comments; ``write_generated`` replaces only that block.

Standard library only: the docs tests and the chart script import it without JAX.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

HEADER = ["what", "brainevent", "baseline (same run)", "ratio", "target", "verdict"]
NO_TARGET = "-"


@dataclass(frozen=True)
class Check:
    """One comparison with a target: ``value`` must not exceed ``limit``."""

    label: str  # what is compared when a row has several checks ("per call"), else ""
    value: float
    limit: float
    unit: str = "x"  # printed after both numbers: "x", " ms", " s", ""
    digits: int = 2
    signed: bool = False  # print "+204 ms" (a difference) rather than "204 ms"

    @property
    def met(self) -> bool:
        return self.value <= self.limit

    def __str__(self) -> str:
        sign = "+" if self.signed else ""
        value = f"{self.value:{sign}.{self.digits}f}{self.unit}"
        limit = f"{self.limit:{sign}g}{self.unit}"
        text = f"{value} {'<=' if self.met else '>'} {limit}"
        return f"{self.label} {text}" if self.label else text


def verdict(*checks: Check) -> str:
    """The verdict cell: met when every check is, with each comparison shown."""
    if not checks:
        return NO_TARGET
    head = "met" if all(c.met for c in checks) else "**not met**"
    return f"{head}: " + "; ".join(str(c) for c in checks)


_CHECK = re.compile(
    r"^(?:(?P<label>.*?) )?(?P<value>[+-]?\d+(?:\.\d+)?)(?P<unit>x| ms| s| us|)"
    r" (?P<op><=|>) (?P<limit>[+-]?\d+(?:\.\d+)?)(?P=unit)$"
)


def checks_of(cell: str) -> list[Check]:
    """The checks written in a verdict cell (empty for ``-``); ValueError if it is malformed."""
    cell = cell.strip()
    if cell == NO_TARGET:
        return []
    head, _, body = cell.partition(": ")
    if head not in ("met", "**not met**") or not body:
        raise ValueError(f"verdict {cell!r} is not 'met: ...', '**not met**: ...' or '-'")
    checks = []
    for part in body.split("; "):
        match = _CHECK.match(part)
        if match is None:
            raise ValueError(f"check {part!r} in verdict {cell!r} is not '[label] value <= limit'")
        value, limit = float(match["value"]), float(match["limit"])
        if (match["op"] == "<=") != (value <= limit):
            raise ValueError(f"check {part!r} says {match['op']}, but {value} vs {limit} says otherwise")
        digits = len(match["value"].partition(".")[2])
        signed = match["value"].startswith(("+", "-"))
        checks.append(Check(match["label"] or "", value, limit, match["unit"], digits, signed))
    if (head == "met") != all(c.met for c in checks):
        raise ValueError(f"verdict {cell!r} does not agree with its checks")
    return checks


# ------------------------------------------------------------------- Markdown tables


def split_row(line: str) -> list[str]:
    """The cells of a ``| a | b |`` row; ``\\|`` is a literal pipe."""
    inner = line.strip()
    if not (inner.startswith("|") and inner.endswith("|")) or len(inner) < 2:
        raise ValueError(f"not a table row: {line!r}")
    cells = re.split(r"(?<!\\)\|", inner[1:-1])
    return [c.strip() for c in cells]


def table(rows: Sequence[Sequence[str]], header: Sequence[str] = HEADER) -> str:
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"row {list(row)} has {len(row)} cells, the header {len(header)}")
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def read_tables(text: str) -> list[list[dict[str, str]]]:
    """Every table of a Markdown page, as rows of {header cell: cell}."""
    lines = text.splitlines()
    tables: list[list[dict[str, str]]] = []
    i = 0
    while i + 1 < len(lines):
        if lines[i].startswith("|") and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[i + 1].strip()):
            header = split_row(lines[i])
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(dict(zip(header, split_row(lines[i]), strict=False)))
                i += 1
            tables.append(rows)
        else:
            i += 1
    return tables


# ----------------------------------------------------------------- generated block


def markers(script: str) -> tuple[str, str]:
    return (
        f"<!-- generated by benchmarks/{script}: begin (text outside this block is kept) -->",
        f"<!-- generated by benchmarks/{script}: end -->",
    )


def write_generated(path: Path, script: str, block: str) -> None:
    """Replaces the generated block of a results page (or writes the page with only that block)."""
    begin, end = markers(script)
    generated = f"{begin}\n\n{block.strip()}\n\n{end}"
    old = path.read_text() if path.is_file() else ""
    if begin in old and end in old:
        before, _, rest = old.partition(begin)
        _, _, after = rest.partition(end)
        text = before + generated + after
    else:
        text = generated
    path.write_text(text if text.endswith("\n") else text + "\n")
