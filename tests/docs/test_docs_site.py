"""The documentation site builds with warnings as errors (where mkdocs is installed), and
reads the same offline: no script, style sheet or image from another host, code highlighted
at build time (Pygments), the benchmark pages with their charts and whole tables."""

from __future__ import annotations

import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not (ROOT / "mkdocs.yml").is_file(), reason="no mkdocs.yml: not a source checkout"
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    out = tmp_path_factory.mktemp("docs") / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_mkdocs_strict_build(site: Path) -> None:
    assert (site / "index.html").is_file()
    assert (site / "api" / "index.html").is_file()


class _Resources(HTMLParser):
    """What a page loads (scripts, style sheets, images) and the text of its table cells."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.loads: list[str] = []
        self.cells: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "script" and values.get("src"):
            self.loads.append(str(values["src"]))
        elif tag == "link" and values.get("rel") in ("stylesheet", "preload", "icon") and values.get("href"):
            self.loads.append(str(values["href"]))
        elif tag == "img" and values.get("src"):
            self.loads.append(str(values["src"]))
        elif tag in ("td", "th"):
            self._cell = []

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.cells.append("".join(self._cell))
            self._cell = None


def _parse(page: Path) -> _Resources:
    parsed = _Resources()
    parsed.feed(page.read_text())
    return parsed


def test_pages_load_nothing_from_other_hosts(site: Path) -> None:
    remote = []
    for page in sorted(site.rglob("*.html")):
        remote += [
            f"{page.relative_to(site)}: {src}" for src in _parse(page).loads if re.match(r"(https?:)?//", src)
        ]
    assert not remote, "\n".join(remote)


def test_code_is_highlighted_at_build_time(site: Path) -> None:
    html = (site / "cpu-tutorial" / "index.html").read_text()
    assert 'class="codehilite"' in html
    assert re.search(r'<span class="kn">import</span>', html), "Python keywords are not highlighted"
    css = (site / "css" / "pygments.css").read_text()
    assert ".codehilite .kn {" in css
    assert "css/pygments.css" in html


@pytest.mark.parametrize("name", ["benchmarks-cpu", "benchmarks-gpu"])
def test_benchmark_pages_show_charts_and_whole_tables(site: Path, name: str) -> None:
    page = site / name / "index.html"
    parsed = _parse(page)
    assert f"../img/{name}.png" in parsed.loads
    assert (site / "img" / f"{name}.png").is_file()
    assert any(c.startswith(("met: ", "not met: ")) for c in parsed.cells), "no verdicts in the table"
    # The text after a table is a paragraph, never a table cell.
    assert not [c for c in parsed.cells if "Run-to-run" in c or "The chart is drawn" in c]
