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

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"


def median_time(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


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
    return (
        f"{datetime.date.today().isoformat()}, {cpu}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, commit {commit or 'unknown'}"
    )


def table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
