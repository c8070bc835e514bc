"""The `unit` tier runs no compiler (docs/testing.md): while a unit test runs, PATH starts with
stand-ins for the compilers, and a unit test that ran one fails, naming what it ran. Checked in
a child pytest with this suite's conftest.py; and the tests that used to compile in the tier
(in subprocesses, where collection cannot see it) are in the `host` or `nvcc` tier now."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFTEST = ROOT / "tests" / "conftest.py"

TESTS = """
import shutil
import subprocess

import pytest


def test_pure_python():
    assert sum(range(4)) == 6


def test_compiles_in_a_subprocess(tmp_path):
    (tmp_path / "a.cpp").write_text("int main() { return 0; }")
    compiler = shutil.which("g++") or shutil.which("c++")
    subprocess.run([compiler, "-c", "a.cpp"], cwd=tmp_path)  # its failure is not even looked at


@pytest.mark.host
def test_compiles_in_its_tier(tmp_path):
    (tmp_path / "a.cpp").write_text("int main() { return 0; }")
    compiler = shutil.which("g++") or shutil.which("c++")
    subprocess.run([compiler, "-c", "a.cpp"], cwd=tmp_path, check=True)
"""


@pytest.mark.skipif(os.name == "nt", reason="not applicable: the stand-ins are shell scripts")
def test_a_unit_test_that_runs_a_compiler_fails_and_says_which_tier(tmp_path: Path) -> None:
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_tiers.py").write_text(TESTS)
    env = {k: v for k, v in os.environ.items() if k not in ("CXX", "BRAINEVENT_CXX")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "PASSED test_tiers.py::test_pure_python" in out
    assert "ERROR test_tiers.py::test_compiles_in_a_subprocess" in out  # at teardown
    assert "a `unit` test ran a compiler; mark it `host`" in out and "It ran: g++ -c a.cpp" in out
    if shutil.which("g++") or shutil.which("c++"):
        assert "PASSED test_tiers.py::test_compiles_in_its_tier" in out


# Tests that ran g++, cc or nvcc (directly, through `brainevent demo`/`doctor`, or through a
# script) while they were in the `unit` tier.
MOVED = [
    "tests/build/test_depfile.py::test_a_plain_gxx_depfile_lists_every_header",
    "tests/build/test_optional_headers.py::test_each_header_compiles_on_its_own_in_both_modes",
    "tests/cli/test_cli.py::test_demo_builds_into_the_cache_dir_given",
    "tests/cli/test_cli.py::test_doctor_fails_on_a_broken_nvcc",
    "tests/cli/test_cli.py::test_doctor_without_a_gpu_says_cuda_builds_need_an_arch",
    "tests/conformance/test_matrix.py::test_cpu_cell",
    "tests/numba_bridge/test_numba_cpu.py::test_handler_calls_only_registered_kernels",
    "tests/runtime/test_cuda_graphs_flags.py::test_doctor_reports_capture",
    "tests/toolchain/test_toolchain_cuda_arch.py::test_resolve_from_driver_devices",
    "tests/toolchain/test_toolchain_cuda_driver.py::test_devices_are_read",
    "tests/toolchain/test_toolchain_cuda_host_compat.py::test_real_gxx_version_and_ok_for_nvcc13",
    "tests/toolchain/test_toolchain_cuda_nvcc_wheel.py::test_nvcc_from_the_cuda13_wheel_in_a_fresh_venv",
]


def test_tests_that_compile_are_not_in_the_unit_tier() -> None:
    files = sorted({node.split("::")[0] for node in MOVED})
    collect = ["--collect-only", "-q", "-m", "unit", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *collect, *files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    collected = [line.split("[")[0] for line in done.stdout.splitlines() if "::" in line]
    assert collected, done.stdout  # the files hold unit tests too
    assert not set(MOVED) & set(collected), sorted(set(MOVED) & set(collected))
