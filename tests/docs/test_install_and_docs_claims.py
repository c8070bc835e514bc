"""What a new user reads first holds: pip lines cannot install PyPI's brainevent 0.2.1, the
Numba floor is pyproject's, the README puts the quick tier beside the full suite's cost,
pages that need Numba say so before they import it, and namespaced entry points (which the
docs say work) work."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
EXAMPLES = ROOT / "examples"
# The example's README is read where the checkout has examples/ (an image carries docs/ only).
PAGES = [
    ROOT / "README.md",
    *sorted(DOCS.glob("*.md")),
    *([EXAMPLES / "prebuilt_package" / "README.md"] if EXAMPLES.is_dir() else []),
]

pytestmark = pytest.mark.skipif(not DOCS.is_dir(), reason="not applicable: no docs/, not a source checkout")

# A requirement on brainevent itself in a pip line: "brainevent", "brainevent[x]" (quoted or not).
_REQUIREMENT = re.compile(r"""(?<![\w./-])["']?brainevent(\[[\w,]+\])?(?P<rest>[^"'\s]*)["']?""")


def _pip_requirements() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        for line in page.read_text().splitlines():
            if "pip install" not in line or "brainevent==0.2.1" in line:  # the benchmark's old release
                continue
            command = re.split(r"&&|;|#", line.split("pip install", 1)[1])[0]
            for match in _REQUIREMENT.finditer(command):
                found.append((page.name, match.group(0) + "  <- " + line.strip()))
    return found


def test_every_pip_line_asks_for_this_brainevent() -> None:
    requirements = _pip_requirements()
    assert requirements, "no pip lines found"
    for page, text in requirements:
        requirement = text.split("  <- ")[0]
        pinned = ">=0.3" in requirement or "==0.3" in requirement or " @ " in text
        assert pinned, f"{page}: {text} could install PyPI's brainevent 0.2.1; add >=0.3"


def test_install_page_says_how_to_install_from_the_repository() -> None:
    text = (DOCS / "install.md").read_text()
    assert "0.2.1" in text and "git+" in text and "pip install ./brainevent" in text
    assert "No matching distribution found for" in text


def test_numba_floor_in_the_docs_is_pyprojects() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (floor,) = re.findall(
        r"numba>=([\d.]+)", " ".join(pyproject["project"]["optional-dependencies"]["numba"])
    )
    for page in (DOCS / "numba-tutorial.md", DOCS / "install.md", DOCS / "custom-kernels.md"):
        stated = set(
            re.findall(r"[Nn]umba\s*(?:>=|≥)\s*([\d.]+)|Numba \(?([\d.]+) or newer", page.read_text())
        )
        versions = {v for pair in stated for v in pair if v}
        assert versions == {floor}, (page.name, versions, floor)


def test_custom_kernels_page_says_to_install_numba_before_importing_it() -> None:
    text = (DOCS / "custom-kernels.md").read_text()
    assert text.index('pip install "brainevent[numba]>=0.3"') < text.index("import numba")


def test_readme_puts_the_quick_tier_beside_the_full_suite() -> None:
    text = (ROOT / "README.md").read_text()
    setup = text[text.index("## Set-up") : text.index("## What you get")]
    assert "pytest -q -m unit" in setup
    rows = {row.split("|")[1].strip(): row for row in setup.splitlines() if row.startswith("| ")}
    # Each tier states what it costs: its time and the environment's size.
    assert re.search(r"about \d+ minutes", rows["`pytest -m unit`"]), rows
    assert re.search(r"about \d+ minutes", rows["2. `pytest`"]), rows
    assert re.search(r"about \d+(\.\d+)? GB", rows["`pytest -m unit`"]), rows


def test_docs_no_longer_say_namespaced_entry_points_fail() -> None:
    for page in ("troubleshooting.md", "arg-spec.md", "architecture.md"):
        text = (DOCS / page).read_text()
        assert (
            "must be visible at global scope" not in text and "means the entry point is inside a" not in text
        )


@pytest.mark.host
def test_namespaced_entry_points_work() -> None:
    import jax.numpy as jnp
    import numpy as np

    import brainevent

    mod = brainevent.load_cpp_inline(
        name="docs_namespaced",
        cpp_sources=r"""
#include "brainevent/common.h"
namespace ops {
// @BE neg arg ret:like(x)
void neg(const BE::Tensor x, BE::Tensor out) {
  for (int64_t i = 0; i < x.numel(); ++i) out.at<float>(i) = -x.at<float>(i);
}
}
""",
    )
    np.testing.assert_array_equal(np.asarray(mod.neg(jnp.ones(3, jnp.float32))), [-1, -1, -1])
