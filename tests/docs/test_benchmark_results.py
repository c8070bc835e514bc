"""The benchmark tables' verdicts, generated blocks and charts (benchmarks/results.py, charts.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"

pytestmark = pytest.mark.skipif(not BENCH.is_dir(), reason="no benchmarks/: not a source checkout")


@pytest.fixture(scope="module")
def results() -> Iterator[Any]:
    sys.path.insert(0, str(BENCH))
    try:
        import results as module

        yield module
    finally:
        sys.path.remove(str(BENCH))


def test_verdicts_round_trip(results: Any) -> None:
    Check = results.Check
    cases = [
        (results.verdict(Check("", 0.36, 0.4)), "met: 0.36x <= 0.4x"),
        (results.verdict(Check("", 204, 500, " ms", 0, signed=True)), "met: +204 ms <= +500 ms"),
        (
            results.verdict(
                Check("per call", 1.004, 1.15, digits=3), Check("per step", 1.276, 1.15, digits=3)
            ),
            "**not met**: per call 1.004x <= 1.15x; per step 1.276x > 1.15x",
        ),
        (results.verdict(), "-"),
    ]
    for text, expected in cases:
        assert text == expected
        assert results.verdict(*results.checks_of(text)) == text


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        ("met: 1.3x <= 1.2x", "says <=, but"),
        ("met: per call 0.9x <= 1.2x; per step 1.3x > 1.2x", "does not agree"),
        ("ok: 0.3x <= 0.4x", "is not 'met: ...'"),
        ("met: fast", "is not '\\[label\\] value <= limit'"),
    ],
)
def test_malformed_verdicts_are_rejected(results: Any, cell: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        results.checks_of(cell)


def test_write_generated_keeps_hand_written_text(results: Any, tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    results.write_generated(page, "bench_x.py", "### X\n\n| a |\n|---|\n| 1 |")
    begin, end = results.markers("bench_x.py")
    page.write_text(page.read_text() + "\nA note written by hand.\n")
    results.write_generated(page, "bench_x.py", "### X\n\n| a |\n|---|\n| 2 |")
    text = page.read_text()
    assert text.count(begin) == 1 and text.count(end) == 1
    assert "| 2 |" in text and "| 1 |" not in text
    assert text.endswith(f"{end}\n\nA note written by hand.\n")


def test_table_rejects_a_row_of_the_wrong_width(results: Any) -> None:
    with pytest.raises(ValueError, match="has 5 cells, the header 6"):
        results.table([["a", "b", "c", "d", "e"]])


def test_charts_are_drawn_from_the_verdicts(results: Any, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (the bench extra)")
    import charts

    page = ROOT / "docs" / "benchmarks-cpu.md"
    bars = charts.bars_of(page.read_text())
    verdicts = [r["verdict"] for t in results.read_tables(page.read_text()) for r in t if "verdict" in r]
    assert len(bars) == sum(len(results.checks_of(v)) for v in verdicts) > 0
    missed = [b for b in bars if not b.check.met]
    assert all(b.share > 1 for b in missed) and all(b.share <= 1 for b in bars if b.check.met)
    out = tmp_path / "chart.png"
    assert charts.draw(page, out, "CPU") == len(bars)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("name", ["benchmarks-cpu", "benchmarks-gpu"])
def test_results_pages_show_their_chart(name: str) -> None:
    page = (ROOT / "docs" / f"{name}.md").read_text()
    assert f"](img/{name}.png)" in page
    assert (ROOT / "docs" / "img" / f"{name}.png").is_file()
