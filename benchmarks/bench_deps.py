"""Cache-hit load time against the number of headers a module's compiler read.

A hit re-checks every recorded header (a stat each; a hash only for a changed stat), so
its cost grows with the header count. This prints, for 0, 50 and 500 headers, the time of
a hit in a fresh process (the first load there) and in the same process (a later load),
as medians over interleaved rounds. With ``--baseline-src`` (the ``src/`` of another
checkout, e.g. ``git worktree add /tmp/base <rev>``) the same loads run against that
implementation in the same rounds, and the table gives ours / baseline.

    python benchmarks/bench_deps.py [--baseline-src /tmp/base/src] [--rounds 7]
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

from common import SRC, machine_line, precompile

LOADS_IN_PROCESS = 20

KERNEL = r"""
#include "brainevent/common.h"
#include "all.h"
// @BE add arg ret
void add(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i] + TOTAL;
}
"""

# Runs in a child process: times the first load (a fresh process's hit) and then
# LOADS_IN_PROCESS more (hits in a process that already loaded the module).
CHILD = r"""
import json, statistics, sys, time
source, cache = sys.argv[1], sys.argv[2]
import jax  # not part of a load's cost
import brainevent
start = time.perf_counter()
mod = brainevent.load_cpp_file(source, name="deps_bench", build_directory=cache)
first = time.perf_counter() - start
later = []
for _ in range(int(sys.argv[3])):
    start = time.perf_counter()
    again = brainevent.load_cpp_file(source, name="deps_bench", build_directory=cache)
    later.append(time.perf_counter() - start)
built = mod.built_now or again.built_now
print(json.dumps({"built": built, "first": first, "later": statistics.median(later)}))
"""


def make_project(root: Path, headers: int) -> Path:
    """A kernel reaching ``headers`` headers (plus all.h), all older than the racy window."""
    root.mkdir(parents=True)
    lines = [f'#include "h{i}.h"' for i in range(headers)]
    total = " + ".join(f"H{i}" for i in range(headers)) or "0"
    (root / "all.h").write_text("#pragma once\n" + "\n".join(lines) + f"\n#define TOTAL ({total})\n")
    for i in range(headers):
        (root / f"h{i}.h").write_text(f"#pragma once\n#define H{i} 1\n")
    source = root / "kernel.cpp"
    source.write_text(KERNEL)
    past = time.time() - 60
    for path in root.iterdir():
        os.utime(path, (past, past))
    return source


def run_child(src: str, source: Path, cache: Path) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=src, JAX_PLATFORMS="cpu")
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(source), str(cache), str(LOADS_IN_PROCESS)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline-src", help="src/ of another checkout to compare with")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--headers", type=int, nargs="+", default=[0, 50, 500])
    args = parser.parse_args()
    precompile()
    impls = {"ours": str(SRC)}
    if args.baseline_src:
        impls["baseline"] = str(Path(args.baseline_src).resolve())
        import compileall

        compileall.compile_dir(impls["baseline"], quiet=1)
    print(machine_line())
    print(
        f"| headers | {' | '.join(f'{n} fresh (ms) | {n} same (ms)' for n in impls)}"
        + (" | fresh ours/base | same ours/base |" if len(impls) > 1 else " |")
    )
    print("|---" * (1 + 2 * len(impls) + (2 if len(impls) > 1 else 0)) + "|")
    with tempfile.TemporaryDirectory() as tmp:
        for count in args.headers:
            source = make_project(Path(tmp) / f"p{count}", count)
            caches = {name: Path(tmp) / f"cache-{name}-{count}" for name in impls}
            for name, src in impls.items():  # build once; every timed load is a hit
                run_child(src, source, caches[name])
            samples: dict[str, dict[str, list[float]]] = {n: {"first": [], "later": []} for n in impls}
            for _ in range(args.rounds):
                for name, src in impls.items():  # interleaved: load changes reach both alike
                    got = run_child(src, source, caches[name])
                    if got["built"]:
                        raise SystemExit(f"{name}: a timed load rebuilt; the benchmark measures hits only")
                    samples[name]["first"].append(got["first"])
                    samples[name]["later"].append(got["later"])
            med = {n: {k: statistics.median(v) * 1e3 for k, v in s.items()} for n, s in samples.items()}
            cells = [f"{med[n]['first']:.2f} | {med[n]['later']:.3f}" for n in impls]
            row = f"| {count} | " + " | ".join(cells)
            if len(impls) > 1:
                row += " | {:.2f}x | {:.2f}x".format(
                    med["ours"]["first"] / med["baseline"]["first"],
                    med["ours"]["later"] / med["baseline"]["later"],
                )
            print(row + " |")


if __name__ == "__main__":
    main()
