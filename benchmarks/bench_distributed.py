"""One compile per jax.distributed job vs one per process.

Starts a 4-process ``jax.distributed`` job on 127.0.0.1 (CPU), each process with its own
empty cache directory (as on separate hosts), and times the cold load of one module in
every process: once with the exchange (one process compiles, the others receive the
entry) and once with ``BRAINEVENT_DISTRIBUTED_BUILD=0`` (every process compiles).

    python benchmarks/bench_distributed.py [--processes 4] [--repeats 3]

Prints the slowest process's load time and the whole job's wall time of each mode (the
median of the repeats) and their ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import SRC

# A few templates instantiated for several types: a compile of about a second, like a
# small real kernel file (the binding's XLA headers cost about as much again).
KERNEL = r"""
#include <algorithm>
#include <numeric>
#include <vector>
#include "brainevent/common.h"
template <typename T> static T fold(const T* x, int64_t n) {
    std::vector<T> v(x, x + n);
    std::sort(v.begin(), v.end());
    return std::accumulate(v.begin(), v.end(), T(0));
}
template double fold<double>(const double*, int64_t);
template long fold<long>(const long*, int64_t);
// @BE total arg ret
void total(const BE::Tensor x, BE::Tensor out) {
    out.data_ptr<float>()[0] = fold(x.data_ptr<float>(), x.numel());
}
"""

CHILD = r"""
import json, sys, time
import jax
rank, count, port = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=count, process_id=rank)
import brainevent
start = time.perf_counter()
mod = brainevent.load_cpp_inline(name="bench_dist", cpp_sources=sys.argv[4])
print(json.dumps({"load_s": time.perf_counter() - start, "built_now": mod.built_now}), flush=True)
jax.distributed.shutdown()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def run_job(processes: int, exchange: bool) -> tuple[float, float, int]:
    """(slowest load in s, job wall time in s, compiles) of one cold job."""
    with tempfile.TemporaryDirectory() as root:
        port = str(_free_port())
        started = time.perf_counter()
        procs = []
        for rank in range(processes):
            env = dict(
                os.environ,
                PYTHONPATH=str(SRC),
                JAX_PLATFORMS="cpu",
                BRAINEVENT_CACHE_DIR=str(Path(root) / f"host{rank}"),
                BRAINEVENT_DISTRIBUTED_BUILD="1" if exchange else "0",
            )
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", CHILD, str(rank), str(processes), port, KERNEL],
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        reports = []
        for proc in procs:
            out, err = proc.communicate(timeout=600)
            if proc.returncode != 0:
                raise SystemExit(err[-3000:])
            reports.append(json.loads(out.strip().splitlines()[-1]))
        wall = time.perf_counter() - started
    return max(r["load_s"] for r in reports), wall, sum(r["built_now"] for r in reports)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = {}
    for exchange in (True, False):
        runs = [run_job(args.processes, exchange) for _ in range(args.repeats)]
        load = statistics.median(r[0] for r in runs)
        wall = statistics.median(r[1] for r in runs)
        rows[exchange] = (load, wall, runs[0][2])
    print(f"{args.processes} processes, {os.cpu_count()} CPUs, median of {args.repeats}")
    print("| mode | compiles | slowest load (s) | job wall time (s) |")
    print("|---|---:|---:|---:|")
    for exchange, label in ((True, "one compile per job"), (False, "one compile per process")):
        load, wall, builds = rows[exchange]
        print(f"| {label} | {builds} | {load:.2f} | {wall:.2f} |")
    print(
        f"ratio (per process / per job): load {rows[False][0] / rows[True][0]:.2f}x, "
        f"wall {rows[False][1] / rows[True][1]:.2f}x"
    )


if __name__ == "__main__":
    main()
