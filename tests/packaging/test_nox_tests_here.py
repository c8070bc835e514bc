"""``nox -s tests-here`` tests the environment it runs in, after checking that environment.

It is the command the conda environment files suggest: unlike ``tests-cpu`` it creates no
virtualenv, so it tests the JAX, CUDA and compilers that the conda environment holds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not (ROOT / "noxfile.py").is_file(), reason="no noxfile.py: not a source checkout"
)


def _nox(*args: str, pythonpath: str) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("nox", reason="nox is not installed (pip install nox)")
    env = dict(os.environ, PYTHONPATH=pythonpath, JAX_PLATFORMS="cpu")
    # `python` in the session is the first on PATH: make it this interpreter.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.pop("CONDA_PREFIX", None)
    return subprocess.run(
        [sys.executable, "-m", "nox", "--no-color", "-s", "tests-here", "--", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_tests_here_runs_pytest_with_this_interpreter() -> None:
    done = _nox(
        "-q", "-p", "no:cacheprovider", "tests/spec/test_spec_tokens.py", pythonpath=str(ROOT / "src")
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert f"python {sys.executable}" in out
    assert "nvcc" in out  # the toolchain it will test (or that there is none)
    assert " passed" in out


def test_tests_here_refuses_a_brainevent_from_elsewhere(tmp_path: Path) -> None:
    other = tmp_path / "brainevent"
    other.mkdir()
    (other / "__init__.py").write_text("")
    done = _nox("-q", "tests/spec/test_spec_tokens.py", pythonpath=str(tmp_path))
    out = done.stdout + done.stderr
    assert done.returncode != 0, out[-4000:]
    assert "not from this checkout" in out and "pip install -e '.[test]'" in out
    assert " passed" not in out
