"""Timings the unit tests used to assert, as ratios against a baseline measured in the same run.

The tests keep their functional checks (one build per module, the hanging build is stopped,
the probe reports no driver); how long those take depends on the machine's load, so it is
measured here instead, where a slow run is a number to look at rather than a failed test:

- many processes cold-load two modules at once, against one process's cold load times the
  number of processes (waiting for one build must cost far less than everyone building);
- a compiler that hangs is stopped, against ``BRAINEVENT_COMPILE_TIMEOUT``;
- the CUDA driver probe on a machine without a driver, against a bare failing ``dlopen``.

(``numba_cuda_kernel`` against ``load_cuda_inline`` per call is a row of bench_cuda.py.)

Usage: python benchmarks/bench_timing.py [--processes N] [--repeat N]
Prints a markdown table; exits 1 when a ratio is over the bound the unit tests used to assert.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import SRC, machine_line, precompile, run_python
from results import table

KERNEL = r"""
#include "brainevent/common.h"
// @BE triple arg ret
void triple(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = 3.0f * x.data_ptr<float>()[i];
}
"""
OTHER = KERNEL.replace("3.0f", "4.0f")

LOADER = r"""
import json, sys, brainevent
mod = brainevent.load_cpp_inline(name=sys.argv[1], cpp_sources=sys.argv[2], auto_register=False)
print(json.dumps({"built_now": mod.built_now}))
"""


def _env(cache: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ, BRAINEVENT_CACHE_DIR=cache, PYTHONPATH=str(SRC))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(extra)
    return env


def _loads(env: dict[str, str], jobs: list[tuple[str, str]]) -> tuple[float, int]:
    """Seconds until every (name, source) load has finished, all started at once; builds done."""
    started = time.monotonic()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", LOADER, name, source], env=env, stdout=subprocess.PIPE, text=True
        )
        for name, source in jobs
    ]
    outs = [p.communicate(timeout=900)[0] for p in procs]
    elapsed = time.monotonic() - started
    if any(p.returncode != 0 for p in procs):
        raise RuntimeError("a loader failed")
    return elapsed, sum(json.loads(o.strip().splitlines()[-1])["built_now"] for o in outs)


def crowd(processes: int, repeat: int) -> tuple[float, float, int]:
    """(median wall of `processes` cold loads of two modules at once, median single cold load, builds)."""
    walls, singles, builds = [], [], 0
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as single, tempfile.TemporaryDirectory() as cache:
            singles.append(_loads(_env(single), [("solo", KERNEL)])[0])
            jobs = [("crowd_a", KERNEL) if i % 2 == 0 else ("crowd_b", OTHER) for i in range(processes)]
            wall, builds = _loads(_env(cache), jobs)
            walls.append(wall)
    return statistics.median(walls), statistics.median(singles), builds


HANG = r"""
import sys, time, brainevent
t = time.monotonic()
try:
    brainevent.load_cpp_inline(name="hangs", cpp_sources=sys.argv[1], auto_register=False)
except brainevent.CompileError as exc:
    assert "timed out" in str(exc), exc
    print(time.monotonic() - t)
"""


def hanging_compiler(timeout: float) -> float:
    """Seconds from the load's start until the CompileError of a compiler that never returns."""
    with tempfile.TemporaryDirectory() as tmp:
        hang = Path(tmp) / "hanging-g++"
        hang.write_text("#!/bin/sh\nsleep 600\n")
        hang.chmod(0o755)
        env = {
            "BRAINEVENT_CACHE_DIR": str(Path(tmp) / "cache"),
            "BRAINEVENT_CXX": str(hang),
            "BRAINEVENT_COMPILE_TIMEOUT": str(timeout),
        }
        return float(run_python(HANG, env=env, args=[KERNEL]).strip())


PROBE = r"""
import ctypes, json, time
from brainevent.toolchain.cuda_driver import probe_devices
t = time.perf_counter()
p = probe_devices()
probe = time.perf_counter() - t
t = time.perf_counter()
try:
    ctypes.CDLL("libbrainevent-bench-missing.so.1")
except OSError:
    pass
dlopen = time.perf_counter() - t
print(json.dumps([probe, dlopen, p.available]))
"""


def driver_probe(repeat: int) -> tuple[float, float, bool]:
    """(median probe seconds in a fresh process, median failing dlopen seconds, driver found)."""
    runs = [json.loads(run_python(PROBE)) for _ in range(repeat)]
    return (
        statistics.median(r[0] for r in runs),
        statistics.median(r[1] for r in runs),
        bool(runs[0][2]),
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--compile-timeout", type=float, default=2.0)
    args = parser.parse_args()
    precompile()
    rows, over = [], []

    wall, single, builds = crowd(args.processes, args.repeat)
    ratio = wall / (single * args.processes)
    rows.append(
        [
            f"{args.processes} processes cold-load two modules at once ({builds} builds)",
            f"{wall:.2f} s",
            f"{args.processes} x one cold load: {single * args.processes:.2f} s",
            f"{ratio:.2f}x",
            "< 0.5x",
        ]
    )
    if ratio >= 0.5 or builds != 2:
        over.append(rows[-1][0])

    stopped = hanging_compiler(args.compile_timeout)
    ratio = stopped / args.compile_timeout
    rows.append(
        [
            "a hanging compiler is stopped and reported",
            f"{stopped:.2f} s",
            f"BRAINEVENT_COMPILE_TIMEOUT: {args.compile_timeout:g} s",
            f"{ratio:.2f}x",
            "< 15x",
        ]
    )
    if ratio >= 15:
        over.append(rows[-1][0])

    probe, dlopen, found = driver_probe(args.repeat)
    label = "CUDA driver probe" + (" (a driver is installed: cuInit included)" if found else ", no driver")
    rows.append(
        [
            label,
            f"{probe * 1e3:.2f} ms",
            f"failing dlopen: {dlopen * 1e3:.3f} ms",
            f"{probe / dlopen:.1f}x",
            "< 0.5 s",
        ]
    )
    if not found and probe >= 0.5:
        over.append(label)

    print(f"Measured {machine_line()}; median of {args.repeat}.\n")
    print(table(rows, ["what", "measured", "baseline (same run)", "ratio", "bound"]))
    for label in over:
        print(f"over its bound: {label}", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
