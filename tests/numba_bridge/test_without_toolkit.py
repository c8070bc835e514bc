"""Numba-CUDA's kernel kinds with no CUDA toolkit: nvcc hidden (PATH without it, CUDA_HOME unset,
BRAINEVENT_NVCC pointing nowhere), their launchers build with the host compiler, and on a GPU
``numba_cuda_kernel`` and ``numba_cuda_callable`` run and match NumPy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ..nvrtc.pip_cuda12_check import HERE, hidden_nvcc_env

CHILD = f"""
import shutil, sys
sys.path.insert(0, {str(HERE)!r})
assert shutil.which("nvcc") is None, "nvcc is still reachable"
from pip_cuda12_check import numba_kinds
from brainevent.launchers.cubin import launcher_for
print("cubin launcher:", launcher_for(3, 1).target)
gpus = numba_kinds()
print("gpus:", len(gpus))
"""


def _run_hidden(tmp_path: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        env=hidden_nvcc_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.host
def test_the_numba_cuda_launchers_build_without_nvcc(tmp_path: Path) -> None:
    out = _run_hidden(tmp_path)
    assert "cubin launcher: brainevent_cubin_3i_1o" in out
    assert "numba_cuda_callable launcher built without nvcc: " in out
    assert not list((tmp_path / "cache").rglob("*.cu"))  # nothing went to nvcc


@pytest.mark.gpu
def test_numba_cuda_kinds_run_without_nvcc(tmp_path: Path) -> None:
    pytest.importorskip("numba.cuda")
    out = _run_hidden(tmp_path)
    assert "numba_cuda_kernel add on" in out and "numba_cuda_callable add on" in out, out
