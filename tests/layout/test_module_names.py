"""A module's name says which one it is: no two modules of the package share a file name (a
traceback, a log line or a search that shows ``key.py`` names one file), and no module is named
after a public name of ``brainevent`` that another module defines (``brainevent.cuda_kernel``
is ``nvrtc/kernel.py``'s, so no ``cuda_kernel.py`` elsewhere)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

import brainevent

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "brainevent"


def _modules() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"]


def test_no_two_modules_share_a_file_name() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in _modules():
        by_name[path.name].append(str(path.relative_to(PACKAGE)))
    shared = {name: sorted(paths) for name, paths in by_name.items() if len(paths) > 1}
    assert not shared, f"rename one of each: {shared}"


def test_no_module_bears_a_public_name_it_does_not_define() -> None:
    exports = brainevent._EXPORTS  # public name -> the module that defines it
    for path in _modules():
        owner = exports.get(path.stem)
        if owner is not None:
            where = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
            assert where.startswith(owner), (
                f"{where} is named after brainevent.{path.stem}, which {owner} defines"
            )
