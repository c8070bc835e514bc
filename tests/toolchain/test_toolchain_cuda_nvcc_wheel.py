"""The real CUDA 13 pip wheel: install ``nvidia-cuda-nvcc`` into a fresh venv and run
discovery in that venv's own interpreter. Slow (downloads ~100 MB); skipped when pip
cannot reach an index."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

_SRC = Path(__file__).resolve().parents[2] / "src"

_PROBE = """
import json
from brainevent.toolchain.nvcc import find_nvcc
from brainevent.toolchain.host_compat import host_limit_for, host_limit_from_header
info = find_nvcc()
row = host_limit_for(info.version)
header = host_limit_from_header(info.root)
print(json.dumps({
    "path": info.path, "root": info.root, "version": info.version,
    "found_via": info.found_via,
    "table": None if row is None else [row.gcc_max, row.clang_max],
    "header": None if header is None else [header.gcc_max, header.clang_max],
}))
"""


@pytest.mark.host
@pytest.mark.slow
def test_nvcc_from_the_cuda13_wheel_in_a_fresh_venv(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / ("Scripts" if os.name == "nt" else "bin") / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
         "nvidia-cuda-nvcc>=13"],
        capture_output=True,
        text=True,
        timeout=1200,
    )  # fmt: skip
    if install.returncode != 0:
        pytest.skip(f"pip could not install nvidia-cuda-nvcc: {install.stderr[-500:]}")

    venv_site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    # The venv's site-packages comes right after our source tree, so its wheel is the
    # first one discovery meets; this interpreter's packages follow, in case importing
    # brainevent needs them.
    path_entries = [str(_SRC), venv_site, *site.getsitepackages()]
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("BRAINEVENT_NVCC", "CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX")
    }
    env["PYTHONPATH"] = os.pathsep.join(path_entries)
    env["JAX_PLATFORMS"] = "cpu"
    proc = subprocess.run([str(python), "-c", _PROBE], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout.strip().splitlines()[-1])

    assert found["found_via"] == "pip-wheel:nvidia-cuda-nvcc"
    assert found["path"].endswith(os.path.join("nvidia", "cu13", "bin", "nvcc"))
    assert Path(found["path"]).resolve().is_relative_to(venv.resolve())
    assert found["root"] == str(Path(found["path"]).parent.parent)
    assert found["version"][0] == 13
    if found["table"] is not None:  # the table agrees with the wheel's own header
        assert found["table"] == found["header"]

    # The wheel brings nvvm, crt and the runtime headers: a trivial kernel compiles.
    if shutil.which("g++") is None:
        return
    source = tmp_path / "k.cu"
    source.write_text(
        "__global__ void k(float* x) { x[threadIdx.x] += 1.0f; }\n"
        "void launch(float* x) { k<<<1, 32>>>(x); }\n"
    )
    compiled = subprocess.run(
        [found["path"], "-c", "-Xcompiler", "-fPIC", "-gencode=arch=compute_80,code=sm_80",
         str(source), "-o", str(tmp_path / "k.o")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr
    assert (tmp_path / "k.o").stat().st_size > 0
