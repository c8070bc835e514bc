"""Measured figures in the prose come from the latest generated benchmark tables.

benchmarks/run.py rewrites docs/benchmarks-cpu.md and docs/benchmarks-gpu.md; figures
quoted elsewhere go stale when it does. The README quotes none (it links to the pages);
every figure in the Results section of docs/benchmarks.md must be one of the tables'
(to its printed precision), so rerunning the benchmarks without updating the prose fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

pytestmark = pytest.mark.skipif(
    not (DOCS / "benchmarks.md").is_file(), reason="not applicable: no docs/, not a source checkout"
)

# "520 ms", "3.81 / 0.110 us", "1.276x", "442.5 ms (438.2 + 4.3)": the numbers and their unit.
FIGURE = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?)(?:\s*/\s*(\d+(?:\.\d+)?))?\s?(ms|us|ns|s|x)\b"
    r"(?:\s*\((\d+(?:\.\d+)?)\s*\+\s*(\d+(?:\.\d+)?)\))?"
)

Figure = tuple[float, str, int]  # value, unit, decimals printed


def figures(text: str) -> set[Figure]:
    found: set[Figure] = set()
    for match in FIGURE.finditer(text):
        unit = match.group(3)
        for number in (match.group(1), match.group(2), match.group(4), match.group(5)):
            if number:
                found.add((float(number), unit, len(number.partition(".")[2])))
    return found


def _in_table(figure: Figure, table: set[Figure]) -> bool:
    value, unit, decimals = figure
    half_step = 0.5 * 10**-decimals + 1e-9  # a prose figure may round the table's
    return any(u == unit and abs(v - value) <= half_step for v, u, _ in table)


def test_figure_parser() -> None:
    assert figures("3.81 / 0.110 us, 1.276x, 442.5 ms (438.2 + 4.3) and 2026-11-23") == {
        (3.81, "us", 2),
        (0.110, "us", 3),
        (1.276, "x", 3),
        (442.5, "ms", 1),
        (438.2, "ms", 1),
        (4.3, "ms", 1),
    }
    assert _in_table((1.28, "x", 2), {(1.276, "x", 3)})
    assert not _in_table((1.03, "x", 2), {(1.043, "x", 3)})
    assert not _in_table((3.81, "ms", 2), {(3.81, "us", 2)})


def test_readme_quotes_no_measured_figures() -> None:
    readme = (ROOT / "README.md").read_text()
    assert figures(readme) == set(), "the README should link to docs/benchmarks*.md instead"


def test_benchmark_prose_quotes_the_latest_tables() -> None:
    tables = {
        "cpu": figures((DOCS / "benchmarks-cpu.md").read_text()),
        "gpu": figures((DOCS / "benchmarks-gpu.md").read_text()),
    }
    text = (DOCS / "benchmarks.md").read_text()
    results = text.split("\n## Results\n", 1)[1].split("\n## ", 1)[0]
    stale = []
    checked = 0
    for paragraph in results.split("\n\n"):
        page = "gpu" if "GPU table" in paragraph else "cpu"
        for figure in sorted(figures(paragraph)):
            checked += 1
            if not _in_table(figure, tables[page]):
                stale.append(f"{figure[0]:g} {figure[1]} (benchmarks-{page}.md has no such figure)")
    assert checked > 20  # the section still quotes figures: the check is not vacuous
    assert stale == [], stale
