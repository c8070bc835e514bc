"""enable_cuda_graphs() edits XLA_FLAGS only while it can still take effect."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _run(code: str, env_flags: str | None) -> str:
    env = dict(os.environ, PYTHONPATH=SRC, JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)
    if env_flags is not None:
        env["XLA_FLAGS"] = env_flags
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_sets_flags_before_backend_init() -> None:
    out = _run("import os, brainevent; print(brainevent.enable_cuda_graphs(), os.environ['XLA_FLAGS'])", None)
    assert out == ("True --xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL --xla_gpu_graph_min_graph_size=1")


def test_keeps_user_choice() -> None:
    out = _run(
        "import os, brainevent; print(brainevent.enable_cuda_graphs(), os.environ['XLA_FLAGS'])",
        "--xla_gpu_enable_command_buffer=FUSION --xla_gpu_graph_min_graph_size=2",
    )
    assert out == "True --xla_gpu_enable_command_buffer=FUSION --xla_gpu_graph_min_graph_size=2"


def test_too_late_after_backend_init() -> None:
    out = _run(
        "import os, jax, brainevent; jax.devices(); print(brainevent.enable_cuda_graphs(), "
        "os.environ.get('XLA_FLAGS', '<unset>'))",
        None,
    )
    assert out == "False <unset>"
