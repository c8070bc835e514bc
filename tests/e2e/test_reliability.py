"""Stress and faults: many cold loaders at once, builds killed at random points, a hanging
compiler, an unusable or full cache directory. Nothing may be lost, corrupted or hang."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent import CacheError, CompileError
from brainevent.cache.manifest import Manifest

SRC = str(Path(__file__).resolve().parents[2] / "src")

KERNEL = r"""
#include "brainevent/common.h"
// @BE triple arg ret
void triple(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = 3.0f * x.data_ptr<float>()[i];
}
"""
OTHER = KERNEL.replace("3.0f", "4.0f")

# Loads a module in a fresh interpreter, without JAX's CPU backend start-up cost dominating:
# registration is skipped and the artifact is opened through ctypes; the test process then
# runs the kernel of the library every process reported.
LOADER = r"""
import ctypes, json, sys
import brainevent
mod = brainevent.load_cpp_inline(name=sys.argv[1], cpp_sources=sys.argv[2], auto_register=False)
lib = ctypes.CDLL(str(mod.path))
assert lib.be_ffi_triple
print(json.dumps({"built_now": mod.built_now, "path": str(mod.path)}))
"""


def _compiler(tmp_path: Path) -> tuple[Path, Path]:
    log = tmp_path / "compiler.log"
    script = tmp_path / "counting-g++"
    script.write_text(f'#!/bin/sh\necho "$$ $*" >> {log}\nsleep "${{BE_TEST_DELAY:-0}}"\nexec g++ "$@"\n')
    script.chmod(0o755)
    return script, log


def _env(cache: Path, cxx: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, BRAINEVENT_CACHE_DIR=str(cache), BRAINEVENT_CXX=str(cxx), PYTHONPATH=SRC)
    env.update(extra)
    return env


def _start(env: dict[str, str], name: str, source: str = KERNEL) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", LOADER, name, source],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _finish(proc: subprocess.Popen[str]) -> dict[str, object]:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def _kernel_compiles(log: Path) -> int:
    return sum(1 for line in log.read_text().splitlines() if " -c src/k0_" in line) if log.exists() else 0


def _stress(tmp_path: Path, processes: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # How long the crowd takes against one load is measured by benchmarks/bench_timing.py.
    cxx, log = _compiler(tmp_path)
    env = _env(tmp_path / "cache", cxx)
    sources = {"stress_a": (KERNEL, 3.0), "stress_b": (OTHER, 4.0)}
    names = ["stress_a" if i % 2 == 0 else "stress_b" for i in range(processes)]
    procs = [_start(env, name, sources[name][0]) for name in names]
    results = [_finish(p) for p in procs]
    assert sum(1 for r in results if r["built_now"]) == 2  # one build per module
    assert _kernel_compiles(log) == 2  # stress_a + stress_b
    paths = {
        name: {str(r["path"]) for n, r in zip(names, results, strict=True) if n == name} for name in sources
    }
    assert all(len(p) == 1 for p in paths.values()) and paths["stress_a"] != paths["stress_b"], paths
    # What every process loaded computes its own module's result (loaded here from the same
    # cache with the same compiler: a hit, no build).
    monkeypatch.setenv("BRAINEVENT_CXX", str(cxx))
    x = jnp.arange(5, dtype=jnp.float32)
    for name, (source, factor) in sources.items():
        mod = brainevent.load_cpp_inline(
            name=name,
            cpp_sources=source,
            build_directory=str(tmp_path / "cache"),
            target_prefix=f"{name}_{processes}",
        )
        assert not mod.built_now and {str(mod.path)} == paths[name]
        np.testing.assert_array_equal(np.asarray(mod.triple(x)), factor * np.arange(5))
    assert _kernel_compiles(log) == 2


def test_eight_processes_two_modules_interleaved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _stress(tmp_path, 8, monkeypatch)


@pytest.mark.slow
def test_sixteen_processes_two_modules_interleaved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _stress(tmp_path, 16, monkeypatch)


def _sigkill_trials(tmp_path: Path, trials: int) -> None:
    cxx, _ = _compiler(tmp_path)
    cache = tmp_path / "cache"
    rng = random.Random(1234)
    for trial in range(trials):
        name = f"killed_{trial % 3}"  # revisit modules, so kills hit half-done states of earlier trials
        proc = _start(_env(cache, cxx, BE_TEST_DELAY=str(rng.choice([0, 0.2, 0.5]))), name)
        time.sleep(rng.uniform(0.05, 2.0))  # anywhere from import to publish
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        # Whatever is published verifies; nothing half-written is visible as an entry.
        module_dir = cache / "v1" / name
        if module_dir.is_dir():
            for entry in module_dir.iterdir():
                if entry.is_dir() and not entry.name.startswith(".") and entry.name != "objects":
                    manifest = Manifest.load(entry)
                    assert manifest is not None and manifest.verify(entry, manifest.key) is None, entry
    for i in range(3):  # and every module loads afterwards, building what the kills interrupted
        result = _finish(_start(_env(cache, cxx), f"killed_{i}"))
        assert Path(str(result["path"])).is_file()


def test_sigkill_at_random_points_three_trials(tmp_path: Path) -> None:
    _sigkill_trials(tmp_path, 3)


@pytest.mark.slow
def test_sigkill_at_random_points_twelve_trials(tmp_path: Path) -> None:
    _sigkill_trials(tmp_path, 12)


def test_hanging_compiler_is_stopped_and_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hang = tmp_path / "hanging-g++"
    hang.write_text("#!/bin/sh\nsleep 600\n")
    hang.chmod(0o755)
    monkeypatch.setenv("BRAINEVENT_CXX", str(hang))
    monkeypatch.setenv("BRAINEVENT_COMPILE_TIMEOUT", "2")
    monkeypatch.setenv("BRAINEVENT_CACHE_DIR", str(tmp_path / "cache"))
    from brainevent.toolchain.host import clear_cache

    clear_cache()
    # How soon after the timeout the build stops is measured by benchmarks/bench_timing.py.
    try:
        with pytest.raises(CompileError, match="timed out"):
            brainevent.load_cpp_inline(name="hangs", cpp_sources=KERNEL, auto_register=False)
    finally:
        monkeypatch.undo()
        clear_cache()
    module_dir = tmp_path / "cache" / "v1" / "hangs"
    assert not [p for p in module_dir.iterdir() if p.is_dir() and not p.name.startswith(".")]
    # No compiler is left running.
    left = subprocess.run(["pgrep", "-f", str(hang)], capture_output=True, text=True).stdout.strip()
    assert left == ""


def test_unusable_cache_directory_gives_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    not_a_dir = tmp_path / "plain-file"
    not_a_dir.write_text("")
    monkeypatch.setenv("BRAINEVENT_CACHE_DIR", str(not_a_dir))
    with pytest.raises(CacheError, match=r"cannot create cache directory .*BRAINEVENT_CACHE_DIR"):
        brainevent.load_cpp_inline(name="nowhere", cpp_sources=KERNEL, auto_register=False)


FULL_DISK = r"""
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
import brainevent
try:
    brainevent.load_cpp_inline(name="full", cpp_sources=sys.argv[1], auto_register=False)
except brainevent.BrainEventError as exc:
    print(type(exc).__name__)
    sys.exit(0)
print("no error")
"""


def test_full_disk_gives_a_clear_error_and_no_entry(tmp_path: Path) -> None:
    env = dict(os.environ, BRAINEVENT_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=SRC)
    done = subprocess.run(
        [sys.executable, "-c", FULL_DISK, KERNEL], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() in ("CompileError", "CacheError")
    module_dir = tmp_path / "cache" / "v1" / "full"
    entries = [
        p for p in module_dir.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != "objects"
    ]
    assert entries == []
