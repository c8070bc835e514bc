"""The command line on a machine where JAX's CUDA plugin is installed but there is no GPU.

JAX's plugin then logs a long traceback ("Jax plugin configuration error ... Unable to load
cuPTI") whenever JAX starts. The command line must not dress it as brainevent's (it shows only
brainevent's own log records, prefixed ``[brainevent]``), and ``doctor`` and ``demo`` say how
to silence it. The plugin is a distribution's metadata in a directory on the path: what
brainevent reads to see it installed, while JAX finds nothing in it to load.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _run(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    paths = [SRC, str(tmp_path / "site"), environ.get("PYTHONPATH", "")]
    environ.update(PYTHONPATH=os.pathsep.join(paths), BRAINEVENT_CACHE_DIR=str(tmp_path / "cache"), **env)
    return subprocess.run(
        [sys.executable, *args], env=environ, capture_output=True, text=True, timeout=600, cwd=tmp_path
    )


@pytest.fixture
def cuda_plugin(tmp_path: Path) -> Path:
    """jax-cuda13-plugin as installed metadata (no module: JAX loads nothing from it)."""
    from brainevent.toolchain.cuda_driver import probe_devices

    if probe_devices().devices:
        pytest.skip("not applicable: a GPU is present, so JAX's CUDA plugin starts cleanly")
    return _plugin_metadata(tmp_path)


def _plugin_metadata(tmp_path: Path) -> Path:
    info = tmp_path / "site" / "jax_cuda13_plugin-0.0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: jax-cuda13-plugin\nVersion: 0.0.1\n")
    return tmp_path


def test_the_cli_shows_only_brainevents_log_records(tmp_path: Path) -> None:
    # A command's run, then a record of JAX's and one of ours, as the plugin's would come.
    script = (
        "import logging\n"
        "from brainevent.cli import main\n"
        "main(['cache', 'list'])\n"
        "logging.getLogger('jax._src.xla_bridge').warning('Jax plugin configuration error')\n"
        "logging.getLogger('brainevent.cache').warning('an entry is damaged')\n"
    )
    done = _run(["-c", script], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "[brainevent] an entry is damaged" in done.stderr
    assert "Jax plugin configuration error" in done.stderr  # Python's own last-resort output
    assert "[brainevent] Jax plugin" not in done.stderr, done.stderr


@pytest.mark.host  # doctor asks the host compiler for its version
def test_doctor_says_how_to_silence_the_plugin_without_a_gpu(cuda_plugin: Path) -> None:
    done = _run(["-m", "brainevent", "doctor", "--no-compile"], cuda_plugin)
    gpus = done.stdout.split("GPUs (CUDA driver API)")[1].split("\n\n")[0]
    assert "jax-cuda13-plugin is installed but the CUDA driver finds no GPU" in gpus, done.stdout
    assert "set JAX_PLATFORMS=cpu to silence it" in gpus and "Unable to load cuPTI" in gpus
    chosen = _run(["-m", "brainevent", "doctor", "--no-compile"], cuda_plugin, JAX_PLATFORMS="cpu")
    assert "GPUs (CUDA driver API)" in chosen.stdout and "JAX_PLATFORMS" not in chosen.stdout


@pytest.mark.host
def test_doctor_has_nothing_to_say_without_a_plugin(tmp_path: Path) -> None:
    from brainevent.toolchain.nvcc import installed_jax_cuda_plugins

    if plugins := installed_jax_cuda_plugins():  # e.g. the cuda13 image: then there is something to say
        pytest.skip(f"not applicable: {', '.join(plugins)} is installed here")
    done = _run(["-m", "brainevent", "doctor", "--no-compile"], tmp_path)
    assert "GPUs (CUDA driver API)" in done.stdout and "JAX_PLATFORMS" not in done.stdout


@pytest.mark.host
def test_the_demo_says_how_to_silence_the_plugin_and_runs_on_the_cpu(cuda_plugin: Path) -> None:
    done = _run(["-m", "brainevent", "demo"], cuda_plugin)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "set JAX_PLATFORMS=cpu to silence it" in done.stdout and "the demo runs on the CPU" in done.stdout
    assert "running on: cpu" in done.stdout and "matches NumPy: True" in done.stdout
    assert "[brainevent]" not in done.stderr, done.stderr


@pytest.mark.gpu
def test_doctor_has_nothing_to_say_with_a_gpu(tmp_path: Path) -> None:
    done = _run(["-m", "brainevent", "doctor", "--no-compile"], _plugin_metadata(tmp_path))
    assert "device 0" in done.stdout and "JAX_PLATFORMS" not in done.stdout, done.stdout
