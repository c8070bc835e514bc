"""Every file and folder docs/architecture.md names exists: a module that moves or is renamed
takes the page's walkthroughs and file lists with it.

A path with a folder is read from the package (``cache/store.py``, ``include/brainevent/``,
``brainevent/headers.py``; a header ``brainevent/x.h`` from ``include/``) or, for
``tests/``, ``benchmarks/`` and ``docs/``, from the repository; a bare file name
(``request.py`` in a folder's table) must name some file of the package."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "brainevent"
PAGE = ROOT / "docs" / "architecture.md"

# Named on the page but not files of this repository: the cache's layout, XLA's headers, and
# the file a walkthrough adds.
NOT_OURS = {"v1/.decoder/objects/", "xla/ffi/api/c_api.h", "xla/ffi/api/ffi.h", "c_api.h", "ffi.h"}
NOT_OURS |= {"platforms/hip.py", "foo_bridge/", "include/brainevent/<kind>_launcher.h"}

pytestmark = [
    pytest.mark.unit,
    # The images carry docs/ but not src/: the page's paths are checked in a checkout only.
    pytest.mark.skipif(
        not (PAGE.is_file() and PACKAGE.is_dir()), reason="not applicable: no src/, not a source checkout"
    ),
]


def _named() -> list[str]:
    spans = re.findall(r"`([\w./<>-]+)`", PAGE.read_text(encoding="utf-8"))
    return sorted({s for s in spans if s.endswith((".py", ".h", "/")) and s not in NOT_OURS})


def _where(name: str) -> Path | None:
    """The path ``name`` stands for, or None for a bare file name."""
    if name.startswith(("tests/", "benchmarks/", "docs/", "src/")):
        return ROOT / name
    if name.startswith("brainevent/") and name.endswith(".h"):
        return PACKAGE / "include" / name
    if name.startswith("brainevent/"):
        return PACKAGE.parent / name
    return PACKAGE / name if "/" in name.rstrip("/") else None


def test_the_page_names_files() -> None:
    assert len(_named()) > 100  # the reading still finds the page's paths


@pytest.mark.parametrize("name", _named())
def test_named_path_exists(name: str) -> None:
    path, said = _where(name), f"docs/architecture.md names {name!r}"
    if path is None:
        assert any(PACKAGE.rglob(name.rstrip("/"))), f"{said}, which no file of the package is"
    else:
        assert path.exists(), f"{said}, but {path.relative_to(ROOT)} does not exist"


def test_the_floors_section_lists_the_floors_in_order() -> None:
    """ "Floors" names every package of ``FLOORS`` (tests/layout), lowest first."""
    from tests.layout.test_import_graph import FLOORS

    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("### Floors") : text.index("### The cache-hit path")]
    named = []
    for package in (p for floor in FLOORS for p in floor):
        token = "__init__.py" if package == "brainevent" else package
        token = f"`{token}/`" if (PACKAGE / token).is_dir() else f"`{token.removesuffix('.py')}.py`"
        assert token in section, f"the Floors section of docs/architecture.md does not name {token}"
        named.append(section.index(token))
    assert named == sorted(named), "the Floors section names the packages out of FLOORS' order"
