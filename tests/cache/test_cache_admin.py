"""One view of the cache for every kind of entry: `cache prune` keeps the builds of NVRTC kernels
that differ (arch, names) as it does modules', `cache info` shows what tells them apart, and the
admin commands touch only verified cache entries, never a directory that merely looks like one."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")

KERNELS = r"""
extern "C" __global__ void add(float* o, const float* a) { o[threadIdx.x] += a[0]; }
extern "C" __global__ void sub(float* o, const float* a) { o[threadIdx.x] -= a[0]; }
"""


def _cli(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": SRC, "JAX_PLATFORMS": "cpu", **env}
    return subprocess.run(
        [sys.executable, "-m", "brainevent", *args],
        env=full,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def nvrtc_kernels(tmp_path: Path) -> dict[str, Path]:
    """add@sm_90, add@sm_80, sub@sm_90, then an edit of the source and add@sm_90 again: the
    entries' directories, the first three used before the edit's."""
    import brainevent.nvrtc as nv
    from brainevent.errors import ToolchainError
    from brainevent.nvrtc.cache import forget_process_memo
    from brainevent.nvrtc.process import nvrtc_info

    try:
        nvrtc_info()
    except ToolchainError as exc:  # the test extra installs nvidia-cuda-nvrtc
        pytest.skip(f"needs libnvrtc (pip install nvidia-cuda-nvrtc): {exc}")
    cache = tmp_path / "cache"
    built = {}
    for label, source, name, arch in (
        ("add@sm_90", KERNELS, "add", "sm_90"),
        ("add@sm_80", KERNELS, "add", "sm_80"),
        ("sub@sm_90", KERNELS, "sub", "sm_90"),
        ("add@sm_90 edited", KERNELS.replace("+= a[0]", "+= 2.0f * a[0]"), "add", "sm_90"),
    ):
        before = set((cache / "v1" / "nvrtc").glob("*")) if cache.exists() else set()
        nv.compile(source, name, arch, build_directory=str(cache))
        (entry,) = {p for p in (cache / "v1" / "nvrtc").iterdir() if p.is_dir()} - before
        built[label] = entry
    forget_process_memo()
    now = time.time()
    for age, entry in zip((40, 30, 20, 10), built.values(), strict=True):
        os.utime(entry, (now - age, now - age))
    return built


def test_prune_keeps_nvrtc_builds_that_differ_and_drops_old_versions(
    nvrtc_kernels: dict[str, Path], tmp_path: Path
) -> None:
    done = _cli("cache", "prune", "--cache-dir", str(tmp_path / "cache"))
    assert done.returncode == 0 and "removed 1 entries" in done.stdout, done.stdout + done.stderr
    kept = {label: entry.is_dir() for label, entry in nvrtc_kernels.items()}
    # Other archs and other kernels are other builds; the edit made a new version of add@sm_90.
    assert kept == {"add@sm_90": False, "add@sm_80": True, "sub@sm_90": True, "add@sm_90 edited": True}


def test_cache_info_shows_each_nvrtc_builds_architecture(
    nvrtc_kernels: dict[str, Path], tmp_path: Path
) -> None:
    done = _cli("cache", "info", "nvrtc", "--cache-dir", str(tmp_path / "cache"))
    assert done.returncode == 0, done.stderr
    builds = sorted(
        line.split(None, 1)[1] for line in done.stdout.splitlines() if line.startswith("  build ")
    )
    assert len(builds) == 4 and all("kind=cubin" in b for b in builds), builds
    assert sum("arch=sm_80" in b for b in builds) == 1 and sum("arch=sm_90" in b for b in builds) == 3
    assert sum("name_expressions=['sub']" in b for b in builds) == 1


def _users_tree(base: Path) -> dict[str, tuple[int, bytes | None]]:
    """A project of the user's that happens to have a v1/<x>/<y>/ layout: mode and contents of each path."""
    for relative in ("v1/api/handlers", "v1/api/objects", "v1/api/0123456789abcdef0123456789abcdef"):
        (base / relative).mkdir(parents=True)
    (base / "v1/api/handlers/users.py").write_text("def get(): ...\n")
    (base / f"v1/api/objects/{'a' * 40}.txt").write_text("notes\n")
    (base / "v1/api/0123456789abcdef0123456789abcdef/README").write_text("no manifest here\n")
    os.chmod(base / "v1/api", 0o755)
    return _snapshot(base)


def _snapshot(base: Path) -> dict[str, tuple[int, bytes | None]]:
    return {
        p.relative_to(base).as_posix(): (
            stat.S_IMODE(p.lstat().st_mode),
            None if p.is_dir() else p.read_bytes(),
        )
        for p in base.rglob("*")
    }


def test_an_empty_cache_dir_is_the_default_root_not_the_working_directory(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    before = _users_tree(project)
    cache = tmp_path / "cache"
    commands = (["cache", "clear", "--all"], ["cache", "prune"], ["cache", "list"], ["cache", "clear", "api"])
    for command in commands:
        done = _cli(*command, "--cache-dir", "", cwd=project, BRAINEVENT_CACHE_DIR=str(cache))
        assert "Traceback" not in done.stderr, done.stderr
        assert str(project) not in done.stdout, done.stdout  # the root used is the configured one
    assert _snapshot(project) == before


def test_admin_commands_touch_only_verified_entries(tmp_path: Path) -> None:
    """A root given by mistake: nothing there is listed, removed or chmod'ed."""
    before = _users_tree(tmp_path)
    for command in (["cache", "list"], ["cache", "prune", "--max-size", "0"], ["cache", "clear", "--all"]):
        done = _cli(*command, "--cache-dir", str(tmp_path))
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stdout + done.stderr
        assert "api/" not in done.stdout
    assert _cli("cache", "clear", "api", "--cache-dir", str(tmp_path)).returncode == 1  # no such module
    assert _snapshot(tmp_path) == before
