"""BRAINEVENT_REQUIRE_ALL_TESTS turns every kind of skip into a failure, except "not applicable"."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"

SKIPPING = """
import pytest

def test_runs():
    pass

def test_skips_in_the_body():
    pytest.skip("no frobnicator here")

def test_imports_a_missing_module():
    pytest.importorskip("brainevent_no_such_module")

@pytest.mark.skipif(True, reason="no widget here")
def test_marked_skipif():
    pass

def test_not_applicable():
    pytest.skip("not applicable: a GPU is present")

@pytest.mark.xfail(reason="known", strict=True)
def test_expected_failure():
    assert False
"""

SKIPPED_MODULE = """
import pytest
pytest.importorskip("brainevent_no_such_module")

def test_never_collected():
    pass
"""


def _pytest(directory: Path, require_all: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, BRAINEVENT_REQUIRE_ALL_TESTS=require_all)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-rA",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            str(directory),
        ],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_every_skip_fails_when_all_tests_are_required(tmp_path: Path) -> None:
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_skipping.py").write_text(SKIPPING)
    (tmp_path / "test_skipped_module.py").write_text(SKIPPED_MODULE)

    required = _pytest(tmp_path, "1")
    out = required.stdout
    assert required.returncode == 1, out + required.stderr
    for name in ("test_skips_in_the_body", "test_imports_a_missing_module"):
        assert f"FAILED test_skipping.py::{name}" in out, out
    assert "ERROR test_skipping.py::test_marked_skipif" in out  # skipped in setup: a setup error
    assert "this test was skipped: no frobnicator here" in out
    assert "this test was skipped: no widget here" in out
    assert "PASSED test_skipping.py::test_runs" in out
    assert "SKIPPED [1] test_skipping.py" in out and "not applicable: a GPU is present" in out
    assert "XFAIL test_skipping.py::test_expected_failure" in out
    # A module skipped at collection cannot fail as a test: the session fails and names it.
    assert "BRAINEVENT_REQUIRE_ALL_TESTS is set, but modules were skipped" in out
    assert "test_skipped_module.py: could not import 'brainevent_no_such_module'" in out
    assert "2 failed, 1 passed, 2 skipped, 1 xfailed, 1 error" in out
