"""`import brainevent` and enable_cuda_graphs() edit XLA_FLAGS only while it can take effect.

Every case runs in a fresh interpreter: XLA reads XLA_FLAGS once, when JAX starts its backend.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")
DEFAULT = "--xla_gpu_enable_command_buffer=+CUSTOM_CALL --xla_gpu_graph_min_graph_size=2"


def _run(code: str, env_flags: str | None, **env_vars: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=SRC, JAX_PLATFORMS="cpu", **env_vars)
    env.pop("XLA_FLAGS", None)
    if "BRAINEVENT_CUDA_GRAPHS" not in env_vars:
        env.pop("BRAINEVENT_CUDA_GRAPHS", None)
    if env_flags is not None:
        env["XLA_FLAGS"] = env_flags
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def _out(code: str, env_flags: str | None, **env_vars: str) -> str:
    done = _run(code, env_flags, **env_vars)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


SHOW = "import os, sys, brainevent; print(os.environ.get('XLA_FLAGS', '<unset>'), '|', 'jax' in sys.modules)"


def test_import_adds_custom_calls_and_min_graph_size_without_importing_jax() -> None:
    assert _out(SHOW, None) == f"{DEFAULT} | False"


def test_installed_xla_parses_the_default_flags() -> None:
    # XLA aborts the process on a flag or value it does not know: a computation proves that
    # the installed jaxlib accepts both flags (the "+" form adds to its default types).
    code = "import brainevent, jax, jax.numpy as jnp; print(float(jax.jit(lambda x: x + 1)(jnp.ones(())))) "
    assert _out(code, None) == "2.0"
    # The same check fails on a value XLA does not know, so it does test the parse.
    bad = _run(
        "import jax, jax.numpy as jnp; jax.jit(lambda x: x + 1)(jnp.ones(()))",
        "--xla_gpu_enable_command_buffer=+NOT_A_TYPE",
    )
    assert bad.returncode != 0 and "NOT_A_TYPE" in bad.stderr


def test_user_flags_are_kept_and_only_missing_ones_added() -> None:
    assert _out(SHOW, "--xla_gpu_enable_command_buffer=FUSION") == (
        "--xla_gpu_enable_command_buffer=FUSION --xla_gpu_graph_min_graph_size=2 | False"
    )
    both = "--xla_gpu_graph_min_graph_size=7 -xla_gpu_enable_command_buffer="
    assert _out(SHOW, both) == f"{both} | False"


def test_opt_out_leaves_xla_flags_alone() -> None:
    assert _out(SHOW, None, BRAINEVENT_CUDA_GRAPHS="0") == "<unset> | False"
    assert _out(SHOW, "--xla_dump_to=/tmp/x", BRAINEVENT_CUDA_GRAPHS="off") == "--xla_dump_to=/tmp/x | False"


def test_bad_opt_out_value_warns_and_changes_nothing() -> None:
    done = _run(SHOW, None, BRAINEVENT_CUDA_GRAPHS="maybe")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "<unset> | False"
    assert "BRAINEVENT_CUDA_GRAPHS='maybe' is not valid" in done.stderr


def test_a_flagfile_is_left_alone() -> None:
    assert _out(SHOW, "--flagfile=/etc/xla.flags") == "--flagfile=/etc/xla.flags | False"


def test_import_after_backend_start_changes_nothing_and_cpu_only_stays_quiet() -> None:
    done = _run(
        "import os, jax; jax.devices(); import brainevent; print(os.environ.get('XLA_FLAGS', '<unset>'))",
        None,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "<unset>"
    assert "CUDA graphs" not in done.stderr  # no GPU backend: nothing to warn about


def test_import_after_jax_but_before_backend_start_still_works() -> None:
    code = "import jax, jax.numpy as jnp, os, brainevent; print(os.environ['XLA_FLAGS'])"
    assert _out(code, None) == DEFAULT


def test_enable_cuda_graphs_explicit_call() -> None:
    code = "import os, brainevent; print(brainevent.enable_cuda_graphs(), os.environ['XLA_FLAGS'])"
    assert _out(code, None, BRAINEVENT_CUDA_GRAPHS="0") == f"True {DEFAULT}"
    kept = "--xla_gpu_enable_command_buffer=FUSION --xla_gpu_graph_min_graph_size=2"
    assert _out(code, kept) == f"True {kept}"


def test_enable_cuda_graphs_too_late_after_backend_init() -> None:
    code = (
        "import os, jax, brainevent; jax.devices(); print(brainevent.enable_cuda_graphs(), "
        "os.environ.get('XLA_FLAGS', '<unset>'))"
    )
    done = _run(code, None, BRAINEVENT_CUDA_GRAPHS="0")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False <unset>"
    assert f'XLA_FLAGS="{DEFAULT}"' in done.stderr


STATUS = "import brainevent.cuda_graphs as g; ok, why = g.capture_status(); print(ok, '|', why)"


@pytest.mark.parametrize(
    ("flags", "env", "expected"),
    [
        (
            None,
            {},
            f"True | on: {DEFAULT} (set by import brainevent)",
        ),
        (None, {"BRAINEVENT_CUDA_GRAPHS": "0"}, "False | off for small graphs"),
        ("--xla_gpu_graph_min_graph_size=5", {}, "False | only for runs of at least 5 commands"),
        # 3 leaves a loop body of one custom call and its counter update (2 commands) out
        ("--xla_gpu_graph_min_graph_size=3", {}, "False | only for runs of at least 3 commands"),
        ("--xla_gpu_graph_min_graph_size=1", {}, "True | on:"),
        (
            "--xla_gpu_enable_command_buffer=FUSION",
            {},
            "False | off: --xla_gpu_enable_command_buffer=FUSION excludes CUSTOM_CALL",
        ),
        (
            "--xla_gpu_enable_command_buffer=-CUSTOM_CALL",
            {},
            "False | off: --xla_gpu_enable_command_buffer=-CUSTOM_CALL",
        ),
        (
            "--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL --xla_gpu_graph_min_graph_size=1",
            {},
            "True | on:",
        ),
    ],
)
def test_capture_status(flags: str | None, env: dict[str, str], expected: str) -> None:
    assert _out(STATUS, flags, **env).startswith(expected)


def test_capture_status_after_a_late_import_gives_the_line_to_use() -> None:
    out = _out("import jax; jax.devices(); " + STATUS, None)
    assert out.startswith("False | brainevent was imported after JAX started its backend")
    assert f'XLA_FLAGS="{DEFAULT}"' in out


# doctor asks the host compiler for its version
@pytest.mark.host
def test_doctor_reports_capture_where_a_gpu_is() -> None:
    from brainevent.toolchain.cuda_driver import probe_devices

    code = (
        "from brainevent.doctor import run_doctor; "
        "print([l for l in run_doctor(compile_checks=False).lines if 'CUDA graphs' in l])"
    )
    out = _out(code, None)
    if probe_devices().devices:
        assert "CUDA graphs" in out and "on: " in out, out
    else:  # no GPU: nothing runs as a CUDA graph, so doctor says nothing of them
        assert out == "[]", out
