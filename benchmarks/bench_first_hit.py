"""The first cache hit of a process, as users make it: what a program pays for its first load.

Each sample is a fresh process that runs ``import jax; jax.devices()``, then times its first
load of a module already in the cache and then a load of a second cached module (a later hit
in the same process). Three calls take turns, fresh process after fresh process, so host noise
falls on all alike:

- ``cpu``: the C++ add of bench_cpu.py;
- ``cuda, arch given``: the seed tutorial's add, built for ``--arch`` (default
  ``BRAINEVENT_CUDA_ARCH``, else sm_80; no GPU needed);
- ``cuda, as users call it``: the same load with no arch, as the tutorial writes it (only where
  JAX sees a GPU: the archs come from JAX's devices).

With ``--baseline-src DIR`` (the ``src`` folder of another checkout, e.g. from ``git worktree
add``), every sample is also taken with that tree, interleaved, each tree with its own cache.

Each row also says how many of the package's modules the first hit imported, and, taken in the
same turns, what importing that many empty (bytecode-compiled) modules costs here: the floor of
the import machinery alone, which a first hit pays before any of its modules' own code runs.

Usage: python benchmarks/bench_first_hit.py [--repeat N] [--arch sm_90] [--baseline-src DIR]
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
from common import ADD_KERNEL, DEFAULT_ARCH, SRC, precompile, run_python

PROBE = r"""
import json, sys, time
import jax
gpu = any(d.platform == "gpu" for d in jax.devices())  # the backend initialised first
import brainevent
platform, source, arch, warming = sys.argv[1], sys.argv[2], sys.argv[3] or None, sys.argv[4] == "warm"
def load(name):
    if platform == "cuda":
        return brainevent.load_cuda_inline(name=name, cuda_sources=source, compute_capability=arch)
    return brainevent.load_cpp_inline(name=name, cpp_sources=source)
before = set(sys.modules)
t = time.perf_counter()
first = load(f"first_hit_{platform}")
t1 = time.perf_counter()
second = load(f"second_hit_{platform}")
t2 = time.perf_counter()
assert warming or not (first.built_now or second.built_now)
build_only = ("brainevent.build", "brainevent.platforms.steps", "brainevent.toolchain.nvcc")
leaked = sorted(m for m in sys.modules if m.startswith(build_only))
imported = sum(m.startswith("brainevent") for m in set(sys.modules) - before)
print(json.dumps({"first": t1 - t, "later": t2 - t1, "leaked": leaked, "gpu": gpu, "modules": imported}))
"""

# The same process start, then ``count`` empty modules of a throwaway package imported.
FLOOR = r"""
import importlib, json, sys, time
import jax
jax.devices()
count = int(sys.argv[1])
importlib.import_module("empty_modules")  # the package itself outside the timing: only its modules count
t = time.perf_counter()
for i in range(count):
    importlib.import_module(f"empty_modules.m{i}")
print(json.dumps({"floor": time.perf_counter() - t}))
"""

SOURCES = {"cpu": ADD_KERNEL, "cuda": SEED_ADD}


def _calls(arch: str, gpu: bool) -> dict[str, tuple[str, str]]:
    """{label: (platform, arch given or "")}: the user's CUDA call only where JAX sees a GPU."""
    calls = {"cpu": ("cpu", ""), "cuda, arch given": ("cuda", arch)}
    if gpu:
        calls["cuda, as users call it"] = ("cuda", "")
    return calls


def _empty_package(root: Path, count: int = 200) -> None:
    """``empty_modules`` with ``count`` one-line modules under ``root``, bytecode compiled."""
    import compileall

    package = root / "empty_modules"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for i in range(count):
        (package / f"m{i}.py").write_text(f"VALUE = {i}\n")
    compileall.compile_dir(str(package), quiet=1)


def first_hits(
    repeat: int,
    arch: str,
    trees: dict[str, Path],
    leaks: dict[str, list[str]],
    modules: dict[str, list[int]],
    floors: dict[str, list[float]],
) -> dict[str, list[tuple[float, float]]]:
    """(first hit, later hit) milliseconds per tree and call, ``repeat`` fresh processes each, in
    turns. Also filled: ``leaks``, a baseline's hits that imported build machinery (this tree's stop
    the run); ``modules``, how many of the package's modules each first hit imported; ``floors``,
    per call, the milliseconds of importing as many empty modules as this tree's first hit did."""
    caches = {tree: tempfile.mkdtemp(prefix=f"be-first-hit-{tree}-") for tree in trees}
    empty = Path(tempfile.mkdtemp(prefix="be-first-hit-empty-"))
    _empty_package(empty)
    envs = {t: {"BRAINEVENT_CACHE_DIR": caches[t], "PYTHONPATH": str(src)} for t, src in trees.items()}
    try:
        gpu = False
        for tree in trees:  # build both modules of every call (twice: the second run only hits)
            for platform, given in _calls(arch, True).values():
                for _ in range(2):
                    try:
                        out = run_python(PROBE, envs[tree], [platform, SOURCES[platform], given, "warm"])
                    except RuntimeError:
                        if given or platform != "cuda":
                            raise
                        break  # no GPU: no user's CUDA call here
                    gpu = gpu or json.loads(out.splitlines()[-1])["gpu"]
        samples: dict[str, list[tuple[float, float]]] = {}
        for _ in range(repeat):
            for label, (platform, given) in _calls(arch, gpu).items():
                for tree in trees:
                    out = run_python(PROBE, envs[tree], [platform, SOURCES[platform], given, "hit"])
                    result = json.loads(out.splitlines()[-1])
                    key = f"{tree}: {label}"
                    if result["leaked"] and tree == "this":
                        raise SystemExit(f"a {label} hit imported build machinery: {result['leaked']}")
                    if result["leaked"]:  # a baseline may take the build path: shown, not stopped on
                        leaks[key] = result["leaked"]
                    samples.setdefault(key, []).append((result["first"] * 1000, result["later"] * 1000))
                    modules.setdefault(key, []).append(result["modules"])
                count = str(modules[f"this: {label}"][-1])
                out = run_python(FLOOR, {"PYTHONPATH": str(empty)}, [count])
                floors.setdefault(label, []).append(json.loads(out.splitlines()[-1])["floor"] * 1000)
        return samples
    finally:
        for cache in [*caches.values(), str(empty)]:
            shutil.rmtree(cache, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--arch", default=DEFAULT_ARCH, help="the arch of the explicit-arch CUDA call")
    parser.add_argument("--baseline-src", type=Path, help="another tree's src folder, timed interleaved")
    args = parser.parse_args()
    precompile()
    trees = {"this": SRC}
    if args.baseline_src is not None:
        import compileall

        compileall.compile_dir(str(args.baseline_src), quiet=1)
        trees["baseline"] = args.baseline_src.resolve()
    leaks: dict[str, list[str]] = {}
    modules: dict[str, list[int]] = {}
    floors: dict[str, list[float]] = {}
    samples = first_hits(args.repeat, args.arch, trees, leaks, modules, floors)
    for label, pairs in samples.items():
        first, later = [p[0] for p in pairs], [p[1] for p in pairs]
        print(
            f"{label:34}: first hit median {statistics.median(first):6.2f} ms "
            f"(min {min(first):.2f}, max {max(first):.2f}); later hit median "
            f"{statistics.median(later):5.2f} ms ({len(pairs)} fresh processes; arch {args.arch} where "
            f"given); {statistics.median(modules[label]):.0f} of our modules imported"
        )
    for label, times in floors.items():
        count = statistics.median(modules[f"this: {label}"])
        median = statistics.median(times)
        print(f"import floor, {label:22}: {count:.0f} empty modules {median:5.2f} ms, median")
    for label, names in leaks.items():
        print(f"note: {label} hits imported build machinery ({', '.join(names)}): it took the build path")


if __name__ == "__main__":
    main()
