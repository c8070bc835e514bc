"""Shared helpers for the benchmarks: timing, subprocess probes, markdown tables."""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
# The arch the CUDA benchmarks build for unless --arch says otherwise (no GPU needed).
DEFAULT_ARCH = os.environ.get("BRAINEVENT_CUDA_ARCH") or "sm_80"


# The kernel every CPU benchmark builds (this checkout and the published release alike).
ADD_KERNEL = r"""
#include "brainevent/common.h"

// @BE add arg arg ret
void add(const BE::Tensor a, const BE::Tensor b, BE::Tensor out) {
    const float* pa = a.data_ptr<float>();
    const float* pb = b.data_ptr<float>();
    float* po = out.data_ptr<float>();
    const int64_t n = a.numel();
    for (int64_t i = 0; i < n; ++i) po[i] = pa[i] + pb[i];
}
"""


def add_numba(x, y, out):  # type: ignore[no-untyped-def]
    """The same add for the Numba bridges (compiled with ``numba.njit`` by the caller)."""
    for i in range(out.size):
        out[i] = x[i] + y[i]


def median_time(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def call_costs(
    variants: dict[str, Callable[[Any, Any], Any]], a: Any, b: Any, calls: int, rounds: int = 7
) -> dict[str, tuple[float, float]]:
    """Per variant: (seconds per jitted call, seconds per step of a 1000-step fori_loop).

    Each is the median of `rounds`; the variants take turns within every round, so a change
    in the machine's load during the measurement reaches all of them alike.
    """
    import jax

    def looped(step: Callable[[Any, Any], Any]) -> Any:
        # 1000 dependent steps inside one executable: no dispatch in the figure.
        return jax.jit(lambda x, y: jax.lax.fori_loop(0, 1000, lambda i, v: step(v, y), x))

    compiled = {label: (jax.jit(step), looped(step)) for label, step in variants.items()}
    for one, loop in compiled.values():
        one(a, b).block_until_ready()
        loop(a, b).block_until_ready()
    samples: dict[str, tuple[list[float], list[float]]] = {label: ([], []) for label in compiled}
    for _ in range(rounds):
        for label, (one, loop) in compiled.items():
            start = time.perf_counter()
            for _ in range(calls):
                result = one(a, b)
            result.block_until_ready()
            samples[label][0].append((time.perf_counter() - start) / calls)
            start = time.perf_counter()
            loop(a, b).block_until_ready()
            samples[label][1].append((time.perf_counter() - start) / 1000)
    return {label: (statistics.median(d), statistics.median(s)) for label, (d, s) in samples.items()}


def precompile() -> None:
    """Byte-compile the package first, as pip does on install, so loads time no compilation."""
    import compileall

    compileall.compile_dir(str(SRC), quiet=1)


def run_python(code: str, env: dict[str, str] | None = None, args: Sequence[str] = ()) -> str:
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(SRC) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.pop("PYTHONDONTWRITEBYTECODE", None)
    full_env.update(env or {})
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=full_env, capture_output=True, text=True, timeout=900
    )
    if done.returncode != 0:
        raise RuntimeError(f"benchmark subprocess failed:\n{done.stderr[-4000:]}")
    return done.stdout


def machine_line() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        commit = ""
    commit = commit or os.environ.get("BRAINEVENT_BENCH_COMMIT", "")
    if commit and _source_changed():
        commit += " with uncommitted changes in src/"
    return (
        f"{datetime.date.today().isoformat()}, {cpu}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, commit {commit or 'unknown'}"
    )


def _source_changed() -> bool:
    try:
        status = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no", "--", "src"],
            capture_output=True,
            text=True,
        ).stdout
    except OSError:
        return False
    return bool(status.strip())
