"""Recorded headers that became FIFOs, kernel pseudo-files or paths outside the package are
never read without bound: the entry is stale (rebuilt) or the bundle unused, in bounded time.

Each load that could block runs in a child process with a deadline, so a regression fails
the test instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from brainevent.cache.deps import first_stale, record, snapshot
from brainevent.fileio import NotAPlainFile, sha256_file

SRC = str(Path(__file__).resolve().parents[2] / "src")

KERNEL = """
#include "brainevent/common.h"
#include "h.h"
// @BE f arg ret
void f(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i] + VAL;
}
"""


def _old(path: Path) -> None:
    past = time.time() - 60
    os.utime(path, (past, past))


def test_reading_a_fifo_or_a_pseudo_file_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.h"
    os.mkfifo(fifo)
    for path in (fifo, tmp_path):
        with pytest.raises(NotAPlainFile):
            sha256_file(path)
    with pytest.raises(OSError):  # says 0 bytes, then streams (or refuses a 1-byte read)
        sha256_file("/proc/self/pagemap")
    with pytest.raises(NotAPlainFile):
        sha256_file("/proc/self/status")


def test_a_recorded_header_that_became_special_is_stale_in_bounded_time(tmp_path: Path) -> None:
    header = tmp_path / "h.h"
    header.write_text("#define VAL 3\n")
    _old(header)
    rec = record([str(header)], before=snapshot([str(header)]), started_ns=time.time_ns(), skip_dirs=[])
    assert rec[str(header)][2] is not None
    header.unlink()
    os.mkfifo(header)  # a reader opening it without O_NONBLOCK would wait for a writer for ever
    started = time.monotonic()
    assert "not a regular file" in (first_stale(rec, time.time_ns()) or "")
    # Pseudo files (stat says "regular", size 0, then they stream) are never trusted either.
    pseudo = {"/proc/self/pagemap": [0, os.stat("/proc/self/pagemap").st_mtime_ns, "0" * 64]}
    assert first_stale(pseudo, time.time_ns() + 10**12) is not None
    unverified = record(
        ["/proc/self/pagemap", str(header)], before={}, started_ns=time.time_ns(), skip_dirs=[]
    )
    assert all(row[2] is None for row in unverified.values())
    assert time.monotonic() - started < 5


LOAD = textwrap.dedent(
    """
    import sys, brainevent, jax.numpy as jnp, numpy as np
    try:
        mod = brainevent.load_cpp_file(sys.argv[1], build_directory=sys.argv[2])
        print("LOADED", mod.built_now, float(np.asarray(mod.f(jnp.zeros(1, jnp.float32)))[0]))
    except brainevent.BrainEventError as exc:
        print("TYPED", type(exc).__name__, str(exc)[:300].replace(chr(10), " "))
    """
)


def _load(source: Path, cache: Path, timeout: float = 240) -> str:
    env = dict(os.environ, PYTHONPATH=SRC, JAX_PLATFORMS="cpu", BRAINEVENT_COMPILE_TIMEOUT="20")
    done = subprocess.run(
        [sys.executable, "-c", LOAD, str(source), str(cache)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith(("LOADED", "TYPED"))]
    assert lines, done.stderr[-3000:]
    return lines[-1]


def test_a_header_replaced_by_a_fifo_never_hangs_a_load(tmp_path: Path) -> None:
    source = tmp_path / "k.cpp"
    source.write_text(KERNEL)
    header = tmp_path / "h.h"
    header.write_text("#define VAL 3\n")
    _old(header)
    cache = tmp_path / "cache"
    assert _load(source, cache) == "LOADED True 3.0"
    assert _load(source, cache) == "LOADED False 3.0"
    header.unlink()
    os.mkfifo(header)
    # Stale, so rebuilt; the compiler itself blocks on the FIFO and is stopped by the
    # compile timeout: a typed error in bounded time, never a hang in the cache check.
    outcome = _load(source, cache, timeout=120)
    assert outcome.startswith("TYPED CompileError"), outcome


def _bundle(tmp_path: Path) -> tuple[Path, Path, Path]:
    package = tmp_path / "pkg"
    (package / "kernels").mkdir(parents=True)
    source = package / "kernels" / "k.cpp"
    source.write_text(KERNEL)
    (package / "kernels" / "h.h").write_text("#define VAL 3\n")
    _old(package / "kernels" / "h.h")
    env = dict(os.environ, PYTHONPATH=SRC, JAX_PLATFORMS="cpu", BRAINEVENT_CACHE_DIR=str(tmp_path / "c"))
    done = subprocess.run(
        [sys.executable, "-m", "brainevent", "build", "--into", str(package), "--platform", "cpu"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (manifest,) = package.glob("kernels/_brainevent/*/manifest.json")
    return package, source, manifest


def _set_headers(manifest: Path, headers: dict[str, str]) -> None:
    data = json.loads(manifest.read_text())
    data["inputs"]["bundle_headers"] = headers
    manifest.write_text(json.dumps(data))


def test_bundle_header_records_outside_the_package_or_special_are_refused(tmp_path: Path) -> None:
    package, source, manifest = _bundle(tmp_path)
    cache = tmp_path / "fresh"
    assert _load(source, cache) == "LOADED False 3.0"  # the bundle, no compile
    fifo = package / "kernels" / "fifo.h"
    os.mkfifo(fifo)
    escapes = "../" * 8
    bad = ({"fifo.h": "0" * 64}, {escapes + "proc/self/pagemap": "0" * 64}, {"/etc/hostname": "0" * 64})
    for i, record_ in enumerate(bad):
        _set_headers(manifest, record_)
        # The bundle is not used: the module is compiled instead, in bounded time.
        assert _load(source, tmp_path / f"cache{i}", timeout=120) == "LOADED True 3.0"
