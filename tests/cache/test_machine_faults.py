"""Faults of the machine: a full disk, an interrupt mid-build, a read-only cache, a bundle
built for another kind of machine. Real filesystems (a small tmpfs, as root), real signals."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent import CacheError

SRC = str(Path(__file__).resolve().parents[2] / "src")

KERNEL = """
#include "brainevent/common.h"
// @BE f arg ret
void f(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i] + VAL;
}
"""


def result(mod: brainevent.CompiledModule) -> float:
    return float(np.asarray(mod.f(jnp.zeros(1, jnp.float32)))[0])


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs of its own (root only)."""
    if os.getuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where = tmp_path / "mnt"
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode()[:200]}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(where: Path) -> None:
    """Writes until the filesystem is full."""
    with open(where / "filler", "wb") as fh, contextlib.suppress(OSError):
        while True:
            fh.write(b"\0" * 65536)
            fh.flush()
    with contextlib.suppress(OSError), open(where / "filler2", "wb") as fh:  # the last partial block
        while True:
            fh.write(b"\0")
            fh.flush()


def test_full_disk_during_build_setup_is_a_typed_error_leaving_nothing(small_fs: Path) -> None:
    cache = small_fs / "cache"
    brainevent.load_cpp_inline(
        name="fulldisk", cpp_sources=KERNEL, extra_cflags=["-DVAL=1"], build_directory=cache
    )
    fill(small_fs)
    before = sorted(p.name for p in (cache / "v1" / "fulldisk").iterdir())
    with pytest.raises(CacheError, match="full") as info:
        brainevent.load_cpp_inline(
            name="fulldisk", cpp_sources=KERNEL, extra_cflags=["-DVAL=2"], build_directory=cache
        )
    assert info.value.disk_full and str(small_fs) in str(info.value)
    after = sorted(p.name for p in (cache / "v1" / "fulldisk").iterdir())
    assert [n for n in after if n not in before and not n.endswith((".lock", ".owner"))] == []
    (small_fs / "filler").unlink()
    mod = brainevent.load_cpp_inline(
        name="fulldisk",
        cpp_sources=KERNEL,
        extra_cflags=["-DVAL=2"],
        build_directory=cache,
        target_prefix="fd",
    )
    assert mod.built_now and result(mod) == 2.0


# SIGINT as a terminal's Ctrl-C delivers it: a runner started in the background (nohup,
# `cmd &`) passes SIGINT down ignored, and Python then never raises KeyboardInterrupt.
INTERRUPTED = """
import signal, sys, brainevent
signal.signal(signal.SIGINT, signal.default_int_handler)
brainevent.load_cpp_inline(name="interrupted", cpp_sources=sys.argv[1], extra_cflags=["-DVAL=1"],
                           build_directory=sys.argv[2], auto_register=False)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _signal_masks(pid: int) -> str:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return "unknown"
    return " ".join(line for line in status.splitlines() if line.startswith(("SigBlk", "SigIgn", "SigCgt")))


@pytest.mark.parametrize("how", ["interrupt", "timeout"])
def test_interrupted_or_timed_out_build_stops_every_compiler(tmp_path: Path, how: str) -> None:
    pids = tmp_path / "pids"
    wrapper = tmp_path / "slow-g++"
    wrapper.write_text(
        f'#!/bin/sh\ncase "$*" in *.cpp*) echo $$ >> {pids}; sleep 300 ;; esac\nexec g++ "$@"\n'
    )
    wrapper.chmod(0o755)
    env = dict(os.environ, PYTHONPATH=SRC, JAX_PLATFORMS="cpu", BRAINEVENT_CXX=str(wrapper))
    if how == "timeout":
        env["BRAINEVENT_COMPILE_TIMEOUT"] = "3"
    child = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED, KERNEL, str(tmp_path / "cache")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not pids.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pids.exists(), "the compiler never started"
    masks = _signal_masks(child.pid)  # a child that blocks or ignores SIGINT cannot pass
    if how == "interrupt":
        child.send_signal(signal.SIGINT)
    try:
        _out, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()
        raise AssertionError(f"no exit 60 s after SIGINT; the child's signal masks then: {masks}") from None
    expected = "KeyboardInterrupt" if how == "interrupt" else "CompileError"
    assert expected in err, err[-2000:]
    compilers = [int(p) for p in pids.read_text().split()]
    time.sleep(0.5)
    assert not [p for p in compilers if _alive(p)], "a compiler outlived its build"


def test_clear_and_prune_of_a_read_only_cache_explain(small_fs: Path) -> None:
    cache = small_fs / "cache"
    brainevent.load_cpp_inline(
        name="rocache", cpp_sources=KERNEL, extra_cflags=["-DVAL=1"], build_directory=cache
    )
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    env = dict(os.environ, PYTHONPATH=SRC, JAX_PLATFORMS="cpu")
    for command in (["clear", "--all"], ["prune", "--keep-newest", "1"], ["clear", "rocache"]):
        done = subprocess.run(
            [sys.executable, "-m", "brainevent", "cache", "--cache-dir", str(cache), *command],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 1
        assert "Traceback" not in done.stderr and "by hand" not in done.stderr, done.stderr
        assert "read-only" in done.stderr, done.stderr
    # The read-only cache still serves its hit.
    again = brainevent.load_cpp_inline(
        name="rocache",
        cpp_sources=KERNEL,
        extra_cflags=["-DVAL=1"],
        build_directory=cache,
        target_prefix="ro",
    )
    assert not again.built_now and result(again) == 1.0


def test_bundle_for_another_machine_is_skipped_and_compiled(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "k.cpp").write_text(KERNEL.replace("+ VAL", "+ 3"))
    env = dict(os.environ, PYTHONPATH=SRC, JAX_PLATFORMS="cpu", BRAINEVENT_CACHE_DIR=str(tmp_path / "c"))
    done = subprocess.run(
        [sys.executable, "-m", "brainevent", "build", "--into", str(package), "--platform", "cpu"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (bundle,) = (package / "_brainevent").iterdir()
    (library,) = bundle.glob("*.so")
    data = bytearray(library.read_bytes())
    machine = 183 if int.from_bytes(data[18:20], "little") != 183 else 62  # aarch64, or x86-64
    data[18:20] = machine.to_bytes(2, "little")
    library.write_bytes(bytes(data))
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["artifact_sha256"] = hashlib.sha256(bytes(data)).hexdigest()  # an intact foreign bundle
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    mod = brainevent.load_cpp_file(package / "k.cpp", build_directory=tmp_path / "fresh", target_prefix="fm")
    assert mod.built_now and result(mod) == 3.0
