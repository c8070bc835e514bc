"""The published release (brainevent 0.2.1 from PyPI), measured the way bench_cpu.py measures this checkout.

The published package has the same import name as this project, so it lives in a virtualenv of
its own, and this script runs with that virtualenv's interpreter:

    python3.11 -m venv /tmp/be-published
    /tmp/be-published/bin/pip install brainevent==0.2.1 jax==<same as here> numba==<same as here>
    /tmp/be-published/bin/python benchmarks/bench_published.py            # readable figures
    python benchmarks/run.py --published-python /tmp/be-published/bin/python

It measures, on the CPU and for the same add kernel: a cold `load_cpp_inline` into an empty
cache, the first and a further cache-hit load in a fresh process, and the per-call and
per-loop-step cost under jax.jit of the loaded kernel, of `numba_kernel` and of `jnp`.
With --json it prints one JSON object (bench_cpu.py --published-python reads it and puts the
figures next to this checkout's, measured in the same run).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ADD_KERNEL, SRC, add_numba, call_costs, median_time

# Fresh-process cache hits: the first load (which also imports the loader code) and a
# second module's load; argv[2] is the artifact's mtime from the build, to prove it is a hit.
HIT_PROBE = r"""
import json, os, sys, time
import jax
t0 = time.perf_counter()
import brainevent
t = time.perf_counter()
imported = t - t0
mod = brainevent.load_cpp_inline(name="pub_add", cpp_sources=sys.argv[1])
first = time.perf_counter() - t
t = time.perf_counter()
mod2 = brainevent.load_cpp_inline(name="pub_add2", cpp_sources=sys.argv[1])
second = time.perf_counter() - t
print(json.dumps({"first": first, "second": second, "import": imported,
                  "mtimes": [os.stat(mod.path).st_mtime_ns, os.stat(mod2.path).st_mtime_ns]}))
"""


def _check_interpreter() -> str:
    import brainevent

    where = Path(brainevent.__file__).resolve()
    if SRC.resolve() in where.parents:
        raise SystemExit(
            f"this interpreter imports the checkout ({where}), not the published release: "
            "run bench_published.py with the python of a virtualenv where brainevent is installed from PyPI"
        )
    return str(getattr(brainevent, "__version__", "unknown"))


def _probe(code: str, env: dict[str, str], args: list[str]) -> dict[str, Any]:
    full = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # never this checkout's src/
    full.update(env)
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=full, capture_output=True, text=True, timeout=900
    )
    if done.returncode != 0:
        raise RuntimeError(f"probe failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def cold_build(repeat: int) -> float:
    import brainevent

    builds = iter(range(1_000_000))

    def build() -> None:
        # In the release, build_directory is only scratch space: every module lands in its
        # cache (BRAINEVENT_CACHE_DIR), found by content. A distinct comment per build makes
        # each one a real compile (the comment costs the compiler nothing).
        source = ADD_KERNEL + f"// build {next(builds)}\n"
        with tempfile.TemporaryDirectory() as cache:
            brainevent.load_cpp_inline(
                name="pub_add", cpp_sources=source, build_directory=cache, auto_register=False
            )

    build()  # warm the toolchain probes and the OS file cache, as bench_cpu.py does
    return median_time(build, repeat)


def cache_hit(repeat: int) -> dict[str, float]:
    cache = tempfile.mkdtemp(prefix="be-published-")
    try:
        env = {"BRAINEVENT_CACHE_DIR": cache, "JAX_PLATFORMS": "cpu"}
        built = _probe(HIT_PROBE, env, [ADD_KERNEL])  # builds both modules
        runs = [_probe(HIT_PROBE, env, [ADD_KERNEL]) for _ in range(repeat)]
        if any(r["mtimes"] != built["mtimes"] for r in runs):
            raise RuntimeError("a load in a fresh process rebuilt the module: not a cache hit")
        return {
            "first": statistics.median(r["first"] for r in runs),
            "hit": statistics.median(r["second"] for r in runs),
            "import": statistics.median(r["import"] for r in runs),
        }
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def per_call(n: int, calls: int) -> dict[str, tuple[float, float]]:
    import jax
    import jax.numpy as jnp

    import brainevent

    cache = tempfile.mkdtemp(prefix="be-published-")
    brainevent.load_cpp_inline(name="pub_add", cpp_sources=ADD_KERNEL, build_directory=cache)
    a = jnp.ones(n, jnp.float32)
    b = jnp.ones(n, jnp.float32)
    out = jax.ShapeDtypeStruct(a.shape, a.dtype)
    variants: dict[str, Any] = {
        "load_cpp_inline": lambda x, y: jax.ffi.ffi_call("pub_add.add", out)(x, y),
        "jnp": lambda x, y: x + y,
    }
    try:
        import numba
    except ImportError:
        pass
    else:
        variants["numba_kernel"] = brainevent.numba_kernel(numba.njit(add_numba), outs=out)

    results = call_costs(variants, a, b, calls)
    shutil.rmtree(cache, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ["BRAINEVENT_CACHE_DIR"] = tempfile.mkdtemp(prefix="be-published-")
    version = _check_interpreter()
    import jax

    result: dict[str, Any] = {"version": version, "jax": jax.__version__}
    result["build"] = cold_build(args.repeat)
    result.update(cache_hit(args.repeat))
    result["calls"] = per_call(n=16, calls=2000)
    shutil.rmtree(os.environ["BRAINEVENT_CACHE_DIR"], ignore_errors=True)
    if args.json:
        print(json.dumps(result))
        return
    print(f"brainevent {version} (published), JAX {result['jax']} on CPU")
    print(f"  cold build: {result['build'] * 1000:.0f} ms")
    print(f"  cache-hit load per module, fresh process: {result['hit'] * 1000:.2f} ms")
    print(f"  first cache-hit load, fresh process: {result['first'] * 1000:.1f} ms")
    for label, (d, s) in result["calls"].items():
        print(f"  {label}: {d * 1e6:.2f} us per call, {s * 1e6:.3f} us per 1000-step loop step")


if __name__ == "__main__":
    main()
