"""Markdown tables in README.md and docs/ render as tables, and benchmark rows carry verdicts.

A table is a header row, a delimiter row (``|---|---|``) and body rows, each starting and
ending with ``|``. What breaks one silently (``mkdocs build --strict`` does not complain):

- text on the line right after the last row: the renderer makes it one more row, so a
  paragraph ends up inside the table (it must be followed by a blank line);
- a row with more or fewer cells than the header;
- a ``|`` inside a code span: GitHub splits the cell there, Python-Markdown does not, so
  the page differs between the two (write ``\\|``);
- a row-like line outside any table (e.g. a table without its delimiter row).

The benchmark pages' tables have a ``verdict`` column: ``met`` / ``**not met**`` with the
comparisons behind it for every row that has a target, ``-`` for rows that only report.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.markdown_tables import table_problems

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
BENCHMARK_PAGES = [ROOT / "docs" / "benchmarks-cpu.md", ROOT / "docs" / "benchmarks-gpu.md"]

pytestmark = pytest.mark.skipif(not (ROOT / "docs").is_dir(), reason="no docs/: not a source checkout")

# ---------------------------------------------------------------------- the checker


GOOD = "intro\n\n| a | b |\n|---|---|\n| 1 | `x \\| y` |\n\nafter\n\n```\n| not | a table\n```\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("| a | b |\n|---|---|\n| 1 | 2 |\nRun-to-run variation...\n", "renders as a table row"),
        ("| a | b |\n|---|---|\n| 1 | 2 | 3 |\n\n", "3 cells in a table of 2 columns"),
        ("| a | b |\n|---|---|---|\n| 1 | 2 |\n", "the delimiter row has 3 cells"),
        ("| a | b |\n|---|---|\n| 1 | `x | y` |\n", "| inside a code span"),
        ("text\n\n| a | b |\n| 1 | 2 |\n", "a table row outside a table"),
    ],
)
def test_checker_finds_broken_tables(text: str, expected: str) -> None:
    problems = table_problems(text, "page.md")
    assert any(expected in p for p in problems), problems


def test_checker_accepts_a_good_table() -> None:
    assert table_problems(GOOD, "page.md") == []


# ---------------------------------------------------------------------- the pages


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_tables_render_as_written(page: Path) -> None:
    problems = table_problems(page.read_text(), str(page.relative_to(ROOT)))
    assert not problems, "\n".join(problems)


@pytest.mark.skipif(
    not (ROOT / "benchmarks").is_dir(), reason="not applicable: no benchmarks/, not a source checkout"
)
@pytest.mark.parametrize("page", BENCHMARK_PAGES, ids=[p.name for p in BENCHMARK_PAGES])
def test_benchmark_rows_say_whether_their_target_is_met(page: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from results import checks_of, read_tables
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    tables = [t for t in read_tables(page.read_text()) if t and "target" in t[0]]
    assert tables, f"{page.name}: no results table"
    checked = 0
    for row in (r for t in tables for r in t):
        assert "verdict" in row, f"{page.name}: no verdict column"
        checks = checks_of(row["verdict"])  # raises on a malformed verdict, or one its checks contradict
        if row["target"] in ("report", "-"):
            assert not checks, f"{row['what']}: a verdict without a target"
        else:
            assert checks, f"{row['what']}: target {row['target']!r} but no verdict"
            checked += 1
    assert checked >= 5
