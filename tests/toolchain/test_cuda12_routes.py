"""The two CUDA 12 routes of docs/install.md, as far as a machine without CUDA 12 can test them.

pip's CUDA 12 stack (``brainevent[cuda12]``) installs ``nvidia-cuda-nvcc-cu12``, which holds
ptxas but no nvcc. Next to it, nvcc must come from conda's ``cuda-nvcc`` (in
``$CONDA_PREFIX/bin``) or from a system toolkit (``CUDA_HOME``, ``PATH`` or
``/usr/local/cuda``). These tests lay out that ptxas-only wheel and each route's nvcc, using
the machine's real nvcc (whatever its CUDA version) as the toolkit, and check that the
search skips the wheel and finds the route's nvcc, saying how. A real CUDA 12 nvcc is
exercised by ``nox -s tests-cuda12`` inside ``environment.yml`` or with ``CUDA_HOME`` set.
"""

from __future__ import annotations

import os
import site as site_module
from pathlib import Path

import pytest

from brainevent import config
from brainevent.errors import ToolchainError
from brainevent.toolchain.nvcc import NvccInfo, find_nvcc


@pytest.fixture(scope="module")
def real_nvcc() -> NvccInfo:
    try:
        return find_nvcc()
    except ToolchainError as exc:
        if config.REQUIRE_ALL_TESTS.get():
            pytest.fail(f"no nvcc: {exc}")
        pytest.skip(f"no nvcc: {exc}")
        raise


@pytest.fixture
def cu12_wheel_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """site-packages with the CUDA 12 "nvcc" wheel's layout (ptxas only), and nothing else set."""
    for var in ("BRAINEVENT_NVCC", "CONDA_PREFIX", "CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(var, raising=False)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    site = tmp_path / "site-packages"
    ptxas = site / "nvidia" / "cuda_nvcc" / "bin" / "ptxas"
    ptxas.parent.mkdir(parents=True)
    ptxas.write_text("#!/bin/sh\n")
    ptxas.chmod(0o755)
    monkeypatch.setattr(site_module, "getsitepackages", lambda: [str(site)])
    monkeypatch.setattr(site_module, "ENABLE_USER_SITE", False)
    return [str(site)]


def _rejected_wheel(info: NvccInfo) -> bool:
    return any(
        c.found_via == "pip-wheel:nvidia-cuda-nvcc-cu12" and c.note.startswith("rejected")
        for c in info.candidates
    )


@pytest.mark.nvcc
def test_pip_cuda12_alone_cannot_build(cu12_wheel_only: list[str]) -> None:
    with pytest.raises(ToolchainError, match=r"pip's CUDA 12 wheels carry none") as info:
        find_nvcc(default_roots=(), pathfinder=False)  # the loader's toolkit would be found
    assert "conda install -c conda-forge cuda-nvcc cuda-version=12.9" in str(info.value)


@pytest.mark.nvcc
def test_route_conda_cuda_nvcc(
    real_nvcc: NvccInfo, cu12_wheel_only: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    prefix = tmp_path / "conda-env"
    (prefix / "bin").mkdir(parents=True)
    # Where conda's cuda-nvcc puts it; a script, as cuda-pathfinder resolves symlinks.
    (prefix / "bin" / "nvcc").write_text(f'#!/bin/sh\nexec "{real_nvcc.path}" "$@"\n')
    (prefix / "bin" / "nvcc").chmod(0o755)
    monkeypatch.setenv("CONDA_PREFIX", str(prefix))
    info = find_nvcc(default_roots=())
    assert info.found_via == "conda" and info.version == real_nvcc.version
    assert _rejected_wheel(info)


@pytest.mark.nvcc
def test_route_system_toolkit(
    real_nvcc: NvccInfo, cu12_wheel_only: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if real_nvcc.found_via.startswith("pip-wheel"):
        pytest.skip("not applicable: the nvcc here is the pip wheel, which the search finds before CUDA_HOME")
    monkeypatch.setenv("CUDA_HOME", real_nvcc.root)  # e.g. /usr/local/cuda-12.9
    info = find_nvcc(default_roots=())
    assert info.found_via == "env:CUDA_HOME" and os.path.samefile(info.path, real_nvcc.path)
    assert _rejected_wheel(info)
