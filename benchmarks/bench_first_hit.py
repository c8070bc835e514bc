"""The first cache hit of a process, CUDA next to C++: what a program pays for its first load.

Each sample is a fresh process that runs ``import jax; jax.devices()`` and then times its
first load of a module already in the cache. The CPU module (the add of bench_cpu.py) is
the baseline: the two take turns, fresh process after fresh process, so host noise falls
on both alike, and the ratio is CUDA / CPU. Each platform is timed twice: recalled (the
same call in the same environment, stages/recall.py; a CUDA load is recalled only where JAX
runs CUDA) and in full (a variable the call's digest covers, and the key does not, differs in
every process, so the request, options and key stages run as on a first load of a new call).
The CUDA module is the seed tutorial's add,
built for ``--arch`` (default ``BRAINEVENT_CUDA_ARCH``, else sm_80): no GPU is needed, and on
a GPU host the hit also registers the module with JAX.

Usage: python benchmarks/bench_first_hit.py [--repeat N] [--arch sm_90]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cuda import SEED_ADD
from common import ADD_KERNEL, DEFAULT_ARCH, precompile, run_python

PROBE = r"""
import json, sys, time
import jax
jax.devices()  # the backend initialised first: the figure is brainevent's own
import brainevent
platform, source, arch, warming = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "warm"
t = time.perf_counter()
if platform == "cuda":
    mod = brainevent.load_cuda_inline(name="first_hit_cu", cuda_sources=source, compute_capability=arch)
else:
    mod = brainevent.load_cpp_inline(name="first_hit_cpp", cpp_sources=source)
seconds = time.perf_counter() - t
assert warming or not mod.built_now
build_only = ("brainevent.build", "brainevent.platforms.steps", "brainevent.toolchain.nvcc")
leaked = sorted(m for m in sys.modules if m.startswith(build_only))
recalled = "brainevent.stages.module_key" not in sys.modules
print(json.dumps({"seconds": seconds, "leaked": leaked, "recalled": recalled}))
"""

SOURCES = {"cpu": ADD_KERNEL, "cuda": SEED_ADD}


def first_hits(repeat: int, arch: str) -> dict[str, list[float]]:
    """Milliseconds of each platform's first hit, recalled and in full, ``repeat`` fresh
    processes each, in turns."""
    env = {"BRAINEVENT_CACHE_DIR": tempfile.mkdtemp(prefix="be-first-hit-")}
    try:
        for platform, source in SOURCES.items():  # the build, then the record a recall reads
            run_python(PROBE, env, [platform, source, arch, "warm"])
            run_python(PROBE, env, [platform, source, arch, "warm"])
        samples: dict[str, list[float]] = {}
        for round_ in range(repeat):
            for platform, source in SOURCES.items():
                for how in ("recalled", "full"):
                    variant = dict(env, BRAINEVENT_LOCK_TIMEOUT=f"{1000 + round_}") if how == "full" else env
                    out = run_python(PROBE, variant, [platform, source, arch, "hit"])
                    result = json.loads(out.splitlines()[-1])
                    if result["leaked"]:
                        raise SystemExit(f"a {platform} hit imported build machinery: {result['leaked']}")
                    label = f"{platform}, {'recalled' if result['recalled'] else 'in full'}"
                    samples.setdefault(label, []).append(result["seconds"] * 1000)
        return samples
    finally:
        shutil.rmtree(env["BRAINEVENT_CACHE_DIR"], ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--arch", default=DEFAULT_ARCH)
    args = parser.parse_args()
    precompile()
    samples = first_hits(args.repeat, args.arch)
    for label, values in samples.items():
        ordered = sorted(values)
        print(
            f"first cache hit, {label:16}: median {statistics.median(values):.2f} ms "
            f"(min {ordered[0]:.2f}, max {ordered[-1]:.2f}, {len(values)} fresh processes)"
        )
    for how in ("recalled", "in full"):
        if f"cuda, {how}" in samples and f"cpu, {how}" in samples:
            ratio = statistics.median(samples[f"cuda, {how}"]) / statistics.median(samples[f"cpu, {how}"])
            print(f"CUDA / CPU first hit, {how}: {ratio:.2f}x (arch {args.arch})")


if __name__ == "__main__":
    main()
