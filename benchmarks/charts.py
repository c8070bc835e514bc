"""Charts of the benchmark results: each target's measured value as a share of the target.

Drawn from the verdict column of the results pages (see results.py), so a chart always
shows the table beside it. One bar per comparison: 1.0 is the target itself, a bar that
ends left of the line meets it (green), one that ends right of it does not (red).

    python benchmarks/charts.py            # redraw docs/img/benchmarks-{cpu,gpu}.png from the tables

benchmarks/run.py calls it after writing the tables. Needs matplotlib (the bench extra).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent / "docs"
sys.path.insert(0, str(HERE))
from results import Check, checks_of, read_tables  # noqa: E402

# results page -> (chart, title)
CHARTS = {
    DOCS / "benchmarks-cpu.md": (DOCS / "img" / "benchmarks-cpu.png", "CPU"),
    DOCS / "benchmarks-gpu.md": (DOCS / "img" / "benchmarks-gpu.png", "GPU"),
}
MET, NOT_MET = "#2e7d32", "#c62828"


@dataclass(frozen=True)
class Bar:
    label: str
    check: Check

    @property
    def share(self) -> float:
        """The measured value over the target (1.0: exactly at the target)."""
        return self.check.value / self.check.limit


def bars_of(page_text: str) -> list[Bar]:
    """One bar per comparison in the page's verdict cells, in table order."""
    bars = []
    for rows in read_tables(page_text):
        for row in rows:
            for check in checks_of(row.get("verdict", "-")):
                label = row["what"] + (f" ({check.label})" if check.label else "")
                bars.append(Bar(label.replace("`", ""), check))
    return bars


def draw(page: Path, out: Path, title: str) -> int:
    """Draws the chart of one results page; returns the number of bars."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display
    import matplotlib.pyplot as plt

    bars = bars_of(page.read_text())
    if not bars:
        raise SystemExit(f"{page}: no verdicts to draw (a table with a verdict column is needed)")
    labels = [textwrap.fill(b.label, 46) for b in bars]
    height = 1.3 + 0.32 * sum(label.count("\n") + 1.5 for label in labels)
    fig, ax = plt.subplots(figsize=(9, height))
    y = range(len(bars))[::-1]
    ax.barh(
        list(y), [b.share for b in bars], color=[MET if b.check.met else NOT_MET for b in bars], height=0.6
    )
    ax.axvline(1.0, color="#333333", linestyle="--", linewidth=1, zorder=1)
    for pos, bar in zip(y, bars, strict=True):
        shown = str(replace(bar.check, label=""))  # the label is on the axis already
        box = {"facecolor": "white", "edgecolor": "none", "pad": 1}
        ax.text(max(bar.share, 0) + 0.02, pos, shown, va="center", fontsize=9, bbox=box, zorder=2)
    ax.set_yticks(list(y), labels, fontsize=9)
    right = max(1.35, max(b.share for b in bars) * 1.45)
    ax.set_xlim(min(0.0, min(b.share for b in bars) * 1.1), right)
    ax.set_xlabel("measured / target  (dashed line: the target; green: met, red: not met)", fontsize=9)
    ax.set_title(f"{title} benchmarks: each target's measured value as a share of it", fontsize=11)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, metadata={"Software": None})  # no version stamp: same figures, same file
    plt.close(fig)
    return len(bars)


def draw_all(pages: list[Path] | None = None) -> None:
    for page, (out, title) in CHARTS.items():
        if (pages is None or page in pages) and page.is_file():
            count = draw(page, out, title)
            print(f"{out.relative_to(HERE.parent)}: {count} comparisons from {page.name}")


def main() -> None:
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()
    draw_all()


if __name__ == "__main__":
    main()
