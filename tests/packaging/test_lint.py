"""ruff and mypy stay clean (run where the `test` extra installed them).

Only a checkout has the sources to lint; inside an image (or an sdist) the module skips.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not (ROOT / "src" / "brainevent").is_dir(),
    reason="not applicable: no src/brainevent, not a source checkout",
)


def _run(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    pytest.importorskip(module)
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_ruff_check() -> None:
    done = _run("ruff", "check", "src", "tests", "benchmarks")
    assert done.returncode == 0, done.stdout[-4000:]


def test_ruff_format() -> None:
    done = _run("ruff", "format", "--check", "src", "tests", "benchmarks")
    assert done.returncode == 0, done.stdout[-4000:]


def test_mypy() -> None:
    done = _run("mypy")  # pyproject.toml names the files: the package and the benchmarks
    assert done.returncode == 0, done.stdout[-4000:]
