"""Kernels prebuilt into a user's package: `brainevent build --into`, a wheel, a fresh venv.

The example package in examples/prebuilt_package is built into a wheel (hatchling, no
network), installed into a new virtual environment and run there with nothing but that
environment's bin/ on PATH: no g++, no nvcc. The control damages the installed library:
the bundle is then refused and, with no compiler, the load fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a wheel build and a venv: several seconds

REPO = Path(__file__).resolve().parents[2]
SRC_DIR = str(REPO / "src")
EXAMPLE = REPO / "examples" / "prebuilt_package"
PIP = (sys.executable, "-m", "pip")
# The example lives in the checkout only (an image carries the tests, not examples/).
needs_example = pytest.mark.skipif(
    not EXAMPLE.is_dir(), reason="not applicable: no examples/prebuilt_package, not a source checkout"
)

RUN = textwrap.dedent(
    """
    import json, logging, os
    logging.basicConfig(format="[%(name)s] %(message)s")
    logging.getLogger("brainevent").setLevel(logging.INFO)
    import numpy as np, jax.numpy as jnp
    import brainevent, tinykernels
    x = np.arange(100, dtype=np.float32)
    try:
        out = np.asarray(tinykernels.axpy(2.5, jnp.asarray(x), jnp.ones(100, jnp.float32)))
        report = {"matches": bool(np.array_equal(out, 2.5 * x + 1)),
                  "path": str(tinykernels._module("cpu").path)}
    except brainevent.errors.BrainEventError as exc:
        report = {"error": type(exc).__name__, "message": str(exc)}
    print("REPORT " + json.dumps(report))
    """
)


def _cli(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=SRC_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.update(BRAINEVENT_CACHE_DIR=str(cache), JAX_PLATFORMS="cpu")
    return subprocess.run(
        [sys.executable, "-m", "brainevent", "build", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def build_wheel(tmp: Path, *build_args: str) -> Path:
    """Copies the example, prebuilds its kernels into it and builds its wheel."""
    pytest.importorskip("hatchling", reason="the example's build backend (the test extra has it)")
    project = tmp / "project"
    shutil.copytree(EXAMPLE, project)
    done = _cli("--into", str(project / "src" / "tinykernels"), *build_args, cache=tmp / "build-cache")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "bundled: axpy (cpu)" in done.stdout
    wheel = subprocess.run(
        [*PIP, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(tmp / "dist"), project],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert wheel.returncode == 0, wheel.stdout[-2000:] + wheel.stderr[-2000:]
    (built,) = (tmp / "dist").glob("tinykernels-*.whl")
    return built


def fresh_venv(tmp: Path, wheel: Path) -> Path:
    """A new venv with the wheel installed; JAX and NumPy come from this interpreter's
    site-packages (a .pth file: no download), brainevent from this checkout."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    parents = [p for p in sys.path if p.endswith("site-packages")]
    (Path(site) / "parent_env.pth").write_text("\n".join(parents) + "\n")
    install = subprocess.run(
        [*PIP, "--python", str(python), "install", "--no-deps", "--no-index", "--no-cache-dir", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stdout[-2000:] + install.stderr[-2000:]
    return venv


def run_without_compiler(venv: Path, tmp: Path) -> tuple[dict[str, object], str]:
    env = {
        "PATH": str(venv / "bin"),  # no g++, no nvcc, not even /usr/bin
        "HOME": str(tmp),
        "PYTHONPATH": SRC_DIR,
        "JAX_PLATFORMS": "cpu",
        "BRAINEVENT_CACHE_DIR": str(tmp / "user-cache"),
    }
    python = str(venv / "bin" / "python")
    done = subprocess.run([python, "-c", RUN], env=env, cwd=tmp, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("REPORT "))
    return json.loads(line[len("REPORT ") :]), done.stderr


@needs_example
def test_wheel_runs_without_a_compiler(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path, "--platform", "cpu")
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("tinykernels/kernels/_brainevent/axpy-cpu/libaxpy.") for n in names), names
    venv = fresh_venv(tmp_path, wheel)
    report, _ = run_without_compiler(venv, tmp_path)
    assert report.get("matches") is True, report
    assert Path(str(report["path"])).is_relative_to(venv), report  # the installed bundle
    assert not (tmp_path / "user-cache").exists(), "nothing may be compiled or cached"

    # The control: a damaged library fails its sha256 and is not loaded; with no compiler
    # on PATH the load then fails instead of building.
    (library,) = venv.rglob("_brainevent/axpy-cpu/libaxpy.*.so")
    data = bytearray(library.read_bytes())
    data[len(data) // 2] ^= 0xFF
    library.write_bytes(bytes(data))
    report, log = run_without_compiler(venv, tmp_path)
    assert report.get("error") == "HostCompilerNotFoundError", report  # a ToolchainError
    assert "No C++ compiler found" in str(report["message"]), report
    assert "artifact checksum mismatch" in log, log[-2000:]


@needs_example
def test_bundle_of_other_sources_is_not_used(tmp_path: Path) -> None:
    """Editing a kernel after bundling makes the bundle unused: the edit is compiled."""
    project = tmp_path / "pkg"
    shutil.copytree(EXAMPLE / "src" / "tinykernels", project)
    for path in [project, *project.rglob("*")]:  # a bundle others can write is refused: any umask
        path.chmod(path.stat().st_mode & ~0o022)
    done = _cli("--into", str(project), "--platform", "cpu", cache=tmp_path / "c1")
    assert done.returncode == 0, done.stderr[-3000:]
    source = project / "kernels" / "axpy.cpp"
    probe = textwrap.dedent(
        """
        import sys, numpy as np, brainevent
        mod = brainevent.load_cpp_file(sys.argv[1])
        print(mod.path, float(np.asarray(mod.axpy(np.ones(2, np.float32), np.ones(2, np.float32), a=2.0))[0]))
        """
    )
    env = dict(os.environ, PYTHONPATH=SRC_DIR, JAX_PLATFORMS="cpu", BRAINEVENT_CACHE_DIR=str(tmp_path / "c2"))

    def load() -> tuple[str, float]:
        out = subprocess.run(
            [sys.executable, "-c", probe, str(source)], env=env, capture_output=True, text=True, timeout=300
        )
        assert out.returncode == 0, out.stderr[-3000:]
        path, value = out.stdout.split()
        return path, float(value)

    path, value = load()
    assert "_brainevent" in path and value == 3.0
    source.write_text(source.read_text().replace("a * xs[i] + ys[i]", "a * xs[i] - ys[i]"))
    path, value = load()
    assert "_brainevent" not in path and value == 1.0


@pytest.mark.nvcc
@needs_example
def test_cuda_fat_binary_in_the_wheel(tmp_path: Path) -> None:
    """The wheel's CUDA library holds SASS for each requested arch (read with our reader)."""
    from brainevent.toolchain.fatbin import fatbin_entries

    wheel = build_wheel(tmp_path, "--arch", "sm_75", "--arch", "sm_90")
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if "/_brainevent/axpy-cuda/libaxpy." in n]
        library = tmp_path / "libaxpy.so"
        library.write_bytes(archive.read(name))
        manifest = json.loads(archive.read(name.rsplit("/", 1)[0] + "/manifest.json"))
    sass = {e.arch for e in fatbin_entries(library) if e.kind == "sass"}
    assert sass == {75, 90}, fatbin_entries(library)
    assert manifest["inputs"]["archs"] == ["sm_75", "sm_90"]


def test_build_into_refuses_bad_directories(tmp_path: Path) -> None:
    done = _cli("--into", str(tmp_path / "missing"), cache=tmp_path / "c")
    assert done.returncode == 2 and "missing: not a directory" in done.stderr, done.stderr
    (tmp_path / "pkg").mkdir()
    outside = tmp_path / "elsewhere.cpp"
    outside.write_text("")
    done = _cli(str(outside), "--into", str(tmp_path / "pkg"), cache=tmp_path / "c")
    assert done.returncode == 2 and "elsewhere.cpp not inside" in done.stderr, done.stderr
    done = _cli(cache=tmp_path / "c")
    assert done.returncode == 2 and "give kernel files or directories" in done.stderr, done.stderr


@needs_example
def test_wheel_pins_brainevent_and_carries_a_platform_tag(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path, "--platform", "cpu")
    assert not wheel.name.endswith("-py3-none-any.whl"), wheel.name
    assert wheel.name.endswith(".whl") and "-py3-none-linux_" in wheel.name, wheel.name
    archive = zipfile.ZipFile(wheel)
    metadata = archive.read(next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    from brainevent import __version__

    assert f"Requires-Dist: brainevent=={__version__}" in metadata, metadata
    wheel_info = archive.read(next(n for n in archive.namelist() if n.endswith(".dist-info/WHEEL"))).decode()
    assert "Root-Is-Purelib: false" in wheel_info, wheel_info
