"""The conformance matrix (matrix.py) as tests: one per kernel kind and transformation.

The matrix runs once per platform in a subprocess of its own (CPU: 4 host devices), then what
it exported runs in a second, fresh process. Every cell must compute NumPy's result; the
only cells allowed to fail are ``grad``, ``vjp`` and ``jvp`` of kinds without derivatives of
their own, and they must fail with our error naming ``brainevent.differentiable`` (their
``paired_*`` cells use it); docs/transformations.md lists the matrix.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from . import matrix

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"


def _run_matrix(platform: str, workdir: Path) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    if platform == "cpu":
        env["JAX_PLATFORMS"] = "cpu"
        flags = env.get("XLA_FLAGS", "")
        env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={matrix.N_DEVICES}".strip()
    found: dict[str, Any] = {}
    for mode in ("run", "replay"):
        out = workdir / f"{mode}.json"
        done = subprocess.run(
            [sys.executable, str(HERE / "matrix.py"), mode, platform, str(out), str(workdir)],
            capture_output=True,
            text=True,
            env=env,
            timeout=1200,
        )
        assert done.returncode == 0, done.stderr[-4000:]
        found[mode] = json.loads(out.read_text())
    return found


@pytest.fixture(scope="module")
def cpu_matrix(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _run_matrix("cpu", tmp_path_factory.mktemp("matrix-cpu"))


@pytest.fixture(scope="module")
def gpu_matrix(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _run_matrix("gpu", tmp_path_factory.mktemp("matrix-gpu"))


def _cells(platform: str) -> list[Any]:
    return [
        pytest.param(kind.name, cell, id=f"{kind.name}-{cell}")
        for kind in matrix.KINDS
        if kind.platform == platform
        for cell in [*matrix.cell_names(kind), *matrix.replay_cells(kind)]
    ]


def _check(found: dict[str, Any], kind_name: str, cell: str) -> None:
    kind = next(k for k in matrix.KINDS if k.name == kind_name)
    if kind_name not in found["run"]:
        pytest.skip(f"{kind.needs} is not installed")
    if cell.startswith("export") and importlib.util.find_spec("flatbuffers") is None:
        pytest.skip("flatbuffers is not installed: jax.export serializes with it (pip install flatbuffers)")
    got = (
        found["replay"][kind_name][cell]
        if cell.startswith("export_replay")
        else found["run"][kind_name][cell]
    )
    words = matrix.UNSUPPORTED.get((kind_name, cell))
    if words is not None:
        assert got.startswith("error") and words in got, got
        return
    if cell in ("grad", "vjp", "jvp") and not kind.differentiable:
        # No derivative of its own: our error says so and names the one-liner that gives it one
        # (the paired_* cells of the same row use it).
        assert got.startswith("refused: KernelCallError") and "cannot be differentiated" in got, got
        assert "brainevent.differentiable(f, vjp=" in got, got
        return
    assert got == "ok", got


@pytest.mark.host
@pytest.mark.parametrize(("kind_name", "cell"), _cells("cpu"))
def test_cpu_cell(cpu_matrix: dict[str, Any], kind_name: str, cell: str) -> None:
    assert cpu_matrix["run"]["_devices"]["count"] == str(matrix.N_DEVICES)
    _check(cpu_matrix, kind_name, cell)


@pytest.mark.gpu
@pytest.mark.nvcc
@pytest.mark.parametrize(("kind_name", "cell"), _cells("gpu"))
def test_gpu_cell(gpu_matrix: dict[str, Any], kind_name: str, cell: str) -> None:
    _check(gpu_matrix, kind_name, cell)
