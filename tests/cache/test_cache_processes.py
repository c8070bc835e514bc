"""The cache across processes: hits without a compiler, one build under contention, crashes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

SRC_DIR = str(Path(__file__).resolve().parents[2] / "src")

KERNEL = r"""
#include "brainevent/common.h"
// @BE twice arg ret
void twice(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = 2.0f * x.data_ptr<float>()[i];
}
"""

# Loads the module in a fresh interpreter, checks the result, reports how it went.
LOADER = textwrap.dedent(
    """
    import json, subprocess, sys, time
    import jax, jax.numpy as jnp, numpy as np
    import brainevent
    if "--no-subprocess" in sys.argv:
        def refuse(*a, **k):
            raise AssertionError("a cache hit must not start a subprocess: %r" % (a[:1],))
        subprocess.Popen = refuse
    t = time.perf_counter()
    mod = brainevent.load_cpp_inline(name=sys.argv[1], cpp_sources=sys.argv[2])
    elapsed = time.perf_counter() - t
    y = mod.twice(jnp.arange(4, dtype=jnp.float32))
    assert np.allclose(np.asarray(y), [0, 2, 4, 6]), y
    print(json.dumps({"built_now": mod.built_now, "seconds": elapsed, "path": str(mod.path)}))
    """
)


def _counting_compiler(tmp_path: Path) -> tuple[Path, Path]:
    """The real g++ behind a script that logs each invocation and sleeps $BE_TEST_DELAY first."""
    log = tmp_path / "compiler.log"
    script = tmp_path / "counting-g++"
    script.write_text(f'#!/bin/sh\necho "$$ $*" >> {log}\n' + 'sleep "${BE_TEST_DELAY:-0}"\nexec g++ "$@"\n')
    script.chmod(0o755)
    return script, log


def _env(cache: Path, cxx: Path, delay: float = 0.0) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        BE_TEST_DELAY=str(delay),
        BRAINEVENT_CACHE_DIR=str(cache),
        BRAINEVENT_CXX=str(cxx),
        PYTHONPATH=SRC_DIR + os.pathsep + env.get("PYTHONPATH", ""),
        JAX_PLATFORMS="cpu",
    )
    return env


def _load(env: dict[str, str], name: str, *flags: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", LOADER, name, KERNEL, *flags],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _compiles(log: Path) -> int:
    if not log.exists():
        return 0
    # compiles of the module's own unit (alone, or with the link in one call); not the shared
    # decoder, which the first build in a cache compiles beside it
    return sum(1 for line in log.read_text().splitlines() if " src/k0_" in line)


def _load_concurrently(env: dict[str, str], name: str, n: int) -> list[dict[str, object]]:
    """Starts ``n`` processes that load module ``name`` at once; their JSON reports."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", LOADER, name, KERNEL],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(n)
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def test_cache_hit_in_fresh_process_runs_no_compiler(tmp_path: Path) -> None:
    cxx, log = _counting_compiler(tmp_path)
    env = _env(tmp_path / "cache", cxx)
    first = _load(env, "proc_hit")
    assert first["built_now"] is True
    assert _compiles(log) == 1
    second = _load(env, "proc_hit", "--no-subprocess")
    assert second["built_now"] is False
    assert _compiles(log) == 1
    assert second["path"] == first["path"]


def test_concurrent_loads_compile_once(tmp_path: Path) -> None:
    cxx, log = _counting_compiler(tmp_path)
    env = _env(tmp_path / "cache", cxx, delay=1.0)
    results = _load_concurrently(env, "proc_race", 4)
    assert sum(1 for r in results if r["built_now"]) == 1
    assert _compiles(log) == 1


def test_build_killed_midway_leaves_no_entry_and_next_load_succeeds(tmp_path: Path) -> None:
    cxx, log = _counting_compiler(tmp_path)
    env = _env(tmp_path / "cache", cxx, delay=30.0)
    proc = subprocess.Popen(
        [sys.executable, "-c", LOADER, "proc_killed", KERNEL],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not log.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert log.exists(), "the build never started"
    os.killpg(proc.pid, signal.SIGKILL)  # the loader, ninja and the compilers, all at once
    proc.wait(timeout=30)
    module_dir = tmp_path / "cache" / "v1" / "proc_killed"
    assert [p for p in module_dir.iterdir() if p.is_dir() and not p.name.startswith(".")] == []
    result = _load(_env(tmp_path / "cache", cxx, delay=0.0), "proc_killed")
    assert result["built_now"] is True
    # Abandoned staging directories of the dead builder were cleared under the lock.
    assert not any(p.name.startswith(".staging-") for p in module_dir.iterdir())


@pytest.mark.parametrize("damage", ["truncate", "flip", "manifest"])
def test_damaged_entry_is_rebuilt(tmp_path: Path, damage: str) -> None:
    cxx, log = _counting_compiler(tmp_path)
    env = _env(tmp_path / "cache", cxx)
    first = _load(env, "proc_damage")
    artifact = Path(str(first["path"]))
    if damage == "truncate":
        artifact.write_bytes(artifact.read_bytes()[:1000])
    elif damage == "flip":
        data = bytearray(artifact.read_bytes())
        data[len(data) // 2] ^= 0xFF
        artifact.write_bytes(bytes(data))
    else:
        (artifact.parent / "manifest.json").write_text('{"schema": 1, "key": "trunc')
    second = _load(env, "proc_damage")
    assert second["built_now"] is True
    # Rebuilt: relinked from the cached objects (the object cache survives a damaged entry).
    assert sum("-shared" in line for line in log.read_text().splitlines()) == 2
    third = _load(env, "proc_damage", "--no-subprocess")
    assert third["built_now"] is False


def test_lock_free_concurrent_builders_never_corrupt(tmp_path: Path) -> None:
    """With locking disabled (as on a network filesystem), concurrent builders may all build,
    but every one of them loads a correct module and exactly one intact entry remains."""
    cxx, _ = _counting_compiler(tmp_path)
    env = _env(tmp_path / "cache", cxx, delay=0.5)
    env["BRAINEVENT_USE_LOCKS"] = "0"
    results = _load_concurrently(env, "proc_lockfree", 4)
    assert len({r["path"] for r in results}) == 1
    assert not (
        tmp_path / "cache" / "v1" / "proc_lockfree" / f"{Path(str(results[0]['path'])).parent.name}.lock"
    ).exists()
    module_dir = tmp_path / "cache" / "v1" / "proc_lockfree"
    entries = [
        p for p in module_dir.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != "objects"
    ]
    assert len(entries) == 1
    assert not any(p.name.startswith((".staging-", ".trash-")) for p in module_dir.iterdir())
    assert _load(env, "proc_lockfree", "--no-subprocess")["built_now"] is False
