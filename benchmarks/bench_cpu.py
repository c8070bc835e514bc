"""CPU benchmarks: cold build, cache-hit load in a fresh process, per-call overhead.

Every figure is a ratio against a baseline measured in the same run:
  cold build      vs  `g++ -c` of the user's source alone (same flags)
  cache hit       vs  the 2 ms target (absolute), and dlopen+register of the same .so
  per-call        vs  a hand-written XLA FFI handler (ffi.h) and vs jnp, under jax.jit
  numba_kernel    vs  the same add through load_cpp_inline and vs jnp, under jax.jit
  16 processes    vs  one process cold-loading the same module alone
  published       with --published-python: brainevent 0.2.1 (bench_published.py) in its own venv

Usage: python benchmarks/bench_cpu.py [--write docs/benchmarks-cpu.md] [--published-python PATH]
       python benchmarks/bench_cpu.py --hit-only [--compare-src OTHER/src] [--repeat N]
         (the first cache hit alone; with --compare-src, fresh processes of this tree and of
         another checkout's src/ in turns, so that host noise falls on both alike)
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
from common import (
    ADD_KERNEL,
    SRC,
    add_numba,
    call_costs,
    machine_line,
    median_time,
    precompile,
    run_python,
)
from results import NO_TARGET, Check, table, verdict, write_generated

sys.path.insert(0, str(SRC))

KERNEL = ADD_KERNEL

HAND_WRITTEN = r"""
#include "xla/ffi/api/ffi.h"
namespace ffi = xla::ffi;

static ffi::Error AddImpl(ffi::Buffer<ffi::F32> a, ffi::Buffer<ffi::F32> b, ffi::ResultBuffer<ffi::F32> out) {
    const float* pa = a.typed_data();
    const float* pb = b.typed_data();
    float* po = out->typed_data();
    const size_t n = a.element_count();
    for (size_t i = 0; i < n; ++i) po[i] = pa[i] + pb[i];
    return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(HandAdd, AddImpl,
    ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>());
"""

HIT_PROBE = r"""
import json, sys, time
import jax
jax.devices()  # the backend initialised first: the figure is brainevent's own
t0 = time.perf_counter()
import brainevent
t = time.perf_counter()
imported = t - t0
mod = brainevent.load_cpp_inline(name="bench_add", cpp_sources=sys.argv[1])
first = time.perf_counter() - t
assert not mod.built_now
t = time.perf_counter()
mod2 = brainevent.load_cpp_inline(name="bench_add2", cpp_sources=sys.argv[1])
second = time.perf_counter() - t
assert not mod2.built_now
print(json.dumps({"first": first, "second": second, "import": imported}))
"""

DLOPEN_PROBE = r"""
import ctypes, json, sys, time
import jax
t = time.perf_counter()
lib = ctypes.CDLL(sys.argv[1])
jax.ffi.register_ffi_target("raw.add", jax.ffi.pycapsule(lib.be_ffi_add), platform="cpu")
print(json.dumps({"seconds": time.perf_counter() - t}))
"""


def jax_version() -> str:
    import jax

    return str(jax.__version__)


def cold_build(repeat: int) -> tuple[float, float, float]:
    """(a module never built, the shared decoder cached; g++ -c alone; a first-ever build in an
    empty cache, which compiles the shared decoder too)."""
    import brainevent
    from brainevent.headers import INCLUDE_DIR

    persistent = tempfile.mkdtemp()
    rounds = iter(range(1 << 30))

    def build(cache: str | None = None) -> None:
        source = KERNEL + f"// round {next(rounds)}\n"  # a key no earlier round had
        with tempfile.TemporaryDirectory() as fresh:
            mod = brainevent.load_cpp_inline(
                name="bench_add", cpp_sources=source, build_directory=cache or fresh, auto_register=False
            )
            assert mod.built_now

    def cold() -> None:
        build(persistent)

    def gxx_alone() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "user.cpp"
            src.write_text(KERNEL)
            subprocess.run(
                [
                    "g++",
                    "-std=c++17",
                    "-O3",
                    "-fPIC",
                    "-I",
                    str(INCLUDE_DIR),
                    "-c",
                    str(src),
                    "-o",
                    str(Path(tmp) / "user.o"),
                ],
                check=True,
            )

    cold()  # warm the toolchain memo and the OS file cache; builds the shared decoder
    return median_time(cold, repeat), median_time(gxx_alone, repeat), median_time(build, repeat)


def cache_hit(repeat: int, cache: str) -> tuple[float, float, float, float]:
    """(first load incl. lazy imports, a later module's load, import brainevent, dlopen+register)."""
    import brainevent

    env = {"BRAINEVENT_CACHE_DIR": cache, "JAX_PLATFORMS": "cpu"}
    mod = brainevent.load_cpp_inline(
        name="bench_add", cpp_sources=KERNEL, build_directory=cache, auto_register=False
    )
    brainevent.load_cpp_inline(
        name="bench_add2", cpp_sources=KERNEL, build_directory=cache, auto_register=False
    )
    runs = [json.loads(run_python(HIT_PROBE, env, [KERNEL])) for _ in range(repeat)]
    raw = [json.loads(run_python(DLOPEN_PROBE, env, [str(mod.path)]))["seconds"] for _ in range(repeat)]
    return (
        statistics.median(r["first"] for r in runs),
        statistics.median(r["second"] for r in runs),
        statistics.median(r["import"] for r in runs),
        statistics.median(raw),
    )


# Builds both modules of HIT_PROBE into the cache (a probe then finds them there).
HIT_WARM = r"""
import sys
import brainevent
for name in ("bench_add", "bench_add2"):
    brainevent.load_cpp_inline(name=name, cpp_sources=sys.argv[1], auto_register=False)
"""


def first_hit_compare(repeat: int, other_src: str | None) -> dict[str, list[float]]:
    """First cache-hit loads (ms) in fresh processes, this tree's src/ and ``other_src`` in
    turns, each with its own bytecode-compiled package and its own warm cache."""
    import compileall

    trees = {"this tree": str(SRC)}
    if other_src:
        trees["other"] = str(Path(other_src).resolve())
        compileall.compile_dir(trees["other"], quiet=1)
    envs = {}
    for label, src in trees.items():
        envs[label] = {"PYTHONPATH": src, "JAX_PLATFORMS": "cpu", "BRAINEVENT_CACHE_DIR": tempfile.mkdtemp()}
        run_python(HIT_WARM, envs[label], [KERNEL])
    firsts: dict[str, list[float]] = {label: [] for label in trees}
    for _ in range(repeat):
        for label in trees:
            firsts[label].append(json.loads(run_python(HIT_PROBE, envs[label], [KERNEL]))["first"] * 1000)
    for env in envs.values():
        shutil.rmtree(env["BRAINEVENT_CACHE_DIR"], ignore_errors=True)
    return firsts


def print_first_hits(firsts: dict[str, list[float]]) -> None:
    for label, samples in firsts.items():
        ordered = sorted(samples)
        print(
            f"first cache hit, {label}: median {statistics.median(samples):.2f} ms "
            f"(min {ordered[0]:.2f}, max {ordered[-1]:.2f}, {len(samples)} fresh processes)"
        )


def per_call(cache: str, n: int, calls: int) -> dict[str, tuple[float, float]]:
    import ctypes

    import jax
    import jax.numpy as jnp

    import brainevent
    from brainevent.headers import xla_include_dir

    brainevent.load_cpp_inline(name="bench_add", cpp_sources=KERNEL, build_directory=cache)
    tmp = Path(tempfile.mkdtemp())
    (tmp / "hand.cc").write_text(HAND_WRITTEN)
    subprocess.run(
        [
            "g++",
            "-std=c++17",
            "-O3",
            "-fPIC",
            "-shared",
            "-isystem",
            str(xla_include_dir()),
            str(tmp / "hand.cc"),
            "-o",
            str(tmp / "libhand.so"),
        ],
        check=True,
    )
    hand = ctypes.CDLL(str(tmp / "libhand.so"))
    jax.ffi.register_ffi_target("hand.add", jax.ffi.pycapsule(hand.HandAdd), platform="cpu")

    a = jnp.ones(n, jnp.float32)
    b = jnp.ones(n, jnp.float32)
    out = jax.ShapeDtypeStruct(a.shape, a.dtype)

    variants = {
        "brainevent": lambda x, y: jax.ffi.ffi_call("bench_add.add", out)(x, y),
        "hand-written ffi.h": lambda x, y: jax.ffi.ffi_call("hand.add", out)(x, y),
        "jnp": lambda x, y: x + y,
    }
    try:
        import numba
    except ImportError:
        pass  # no numba_kernel row
    else:
        variants["numba_kernel"] = brainevent.numba_kernel(numba.njit(add_numba), outs=out)
    results = call_costs(variants, a, b, calls)
    shutil.rmtree(tmp, ignore_errors=True)
    return results


def published(python: str, repeat: int) -> dict[str, Any]:
    """The published release's figures, measured by bench_published.py with that interpreter."""
    script = Path(__file__).resolve().parent / "bench_published.py"
    done = subprocess.run(
        [python, str(script), "--json", "--repeat", str(repeat)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0:
        raise RuntimeError(f"bench_published.py failed with {python}:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def published_rows(pub: dict[str, Any], ours: dict[str, Any]) -> list[list[str]]:
    """Rows that put this checkout's figures next to the published release's (same run)."""
    v = pub["version"]
    pc_d, pc_l = pub["calls"]["load_cpp_inline"]
    pj_d, pj_l = pub["calls"]["jnp"]
    be_d, be_l = ours["calls"]["brainevent"]
    ours_first = ours["import"] + ours["first"]
    pub_first = pub["import"] + pub["first"]
    rows = [
        [
            f"cold build (small kernel) vs brainevent {v}",
            f"{ours['build'] * 1000:.0f} ms",
            f"brainevent {v}: {pub['build'] * 1000:.0f} ms",
            f"{ours['build'] / pub['build']:.2f}x",
            "report",
        ],
        [
            f"cache-hit load per module, fresh process, vs brainevent {v}",
            f"{ours['hit'] * 1000:.2f} ms",
            f"brainevent {v}: {pub['hit'] * 1000:.2f} ms",
            f"{ours['hit'] / pub['hit']:.2f}x",
            "report",
        ],
        [
            f"`import brainevent` + first cache-hit load, fresh process, vs brainevent {v}",
            f"{ours_first * 1000:.1f} ms ({ours['import'] * 1000:.1f} + {ours['first'] * 1000:.1f})",
            f"brainevent {v}: {pub_first * 1000:.1f} ms "
            f"({pub['import'] * 1000:.1f} + {pub['first'] * 1000:.1f})",
            f"{ours_first / pub_first:.2f}x",
            "report",
        ],
        [
            f"per call / loop step, load_cpp_inline, vs brainevent {v}",
            f"{be_d * 1e6:.2f} / {be_l * 1e6:.3f} us",
            f"brainevent {v}: {pc_d * 1e6:.2f} / {pc_l * 1e6:.3f} us (jnp in its process: "
            f"{pj_d * 1e6:.2f} / {pj_l * 1e6:.3f} us)",
            f"{be_d / pc_d:.2f}x / {be_l / pc_l:.2f}x",
            "report",
        ],
    ]
    if "numba_kernel" in pub["calls"] and "numba_kernel" in ours["calls"]:
        pn_d, pn_l = pub["calls"]["numba_kernel"]
        nb_d, nb_l = ours["calls"]["numba_kernel"]
        rows.append(
            [
                f"numba_kernel per call / loop step vs brainevent {v}",
                f"{nb_d * 1e6:.2f} / {nb_l * 1e6:.3f} us",
                f"brainevent {v}: {pn_d * 1e6:.2f} / {pn_l * 1e6:.3f} us",
                f"{nb_d / pn_d:.2f}x / {nb_l / pn_l:.3f}x",
                "report",
            ]
        )
    return [[*row, NO_TARGET] for row in rows]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", help="also write the markdown table to this file")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--published-python",
        help="interpreter of a separate venv with the published brainevent: adds comparison rows",
    )
    parser.add_argument("--hit-only", action="store_true", help="measure the first cache hit alone")
    parser.add_argument("--compare-src", help="with --hit-only: another checkout's src/, measured in turns")
    args = parser.parse_args()
    precompile()
    if args.hit_only:
        print_first_hits(first_hit_compare(args.repeat, args.compare_src))
        return
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    cache = tempfile.mkdtemp(prefix="be-bench-")
    os.environ["BRAINEVENT_CACHE_DIR"] = cache

    build_s, gxx_s, first_build_s = cold_build(args.repeat)
    first_s, hit_s, import_s, raw_s = cache_hit(args.repeat, cache)
    calls = per_call(cache, n=16, calls=2000)
    from bench_concurrency import wall_time

    # One process alone, the 16 on a built cache, the 16 cold: in turns, 3 rounds, medians.
    rounds = [(wall_time(1)[0], wall_time(16, warm=True)[0], *wall_time(16)) for _ in range(3)]
    one_s, warm_s, many_s = (statistics.median(r[i] for r in rounds) for i in range(3))
    builds = "/".join(str(r[3]) for r in rounds)
    pub = published(args.published_python, args.repeat) if args.published_python else None

    be_d, be_l = calls["brainevent"]
    hw_d, hw_l = calls["hand-written ffi.h"]
    np_d, np_l = calls["jnp"]
    rows = [
        [
            "cold build (small kernel)",
            f"{build_s * 1000:.0f} ms",
            f"`g++ -c` of the source alone: {gxx_s * 1000:.0f} ms",
            f"{build_s / gxx_s:.2f}x ({(build_s - gxx_s) * 1000:+.0f} ms)",
            "within +200 ms",
            verdict(Check("", (build_s - gxx_s) * 1000, 200, " ms", 0, signed=True)),
        ],
        [
            "first-ever cold build (an empty cache: also compiles the shared FFI decoder)",
            f"{first_build_s * 1000:.0f} ms",
            f"`g++ -c` of the source alone: {gxx_s * 1000:.0f} ms",
            f"{first_build_s / gxx_s:.2f}x ({(first_build_s - gxx_s) * 1000:+.0f} ms)",
            "report",
            NO_TARGET,
        ],
        [
            "cache-hit load per module, fresh process",
            f"{hit_s * 1000:.2f} ms",
            f"dlopen + register: {raw_s * 1000:.2f} ms",
            f"{hit_s / raw_s:.2f}x",
            "<= 2 ms",
            verdict(Check("", hit_s * 1000, 2, " ms")),
        ],
        [
            "first cache-hit load, fresh process, after `import jax` and backend init",
            f"{first_s * 1000:.1f} ms",
            f"`import brainevent` alone: {import_s * 1000:.1f} ms",
            "-",
            "<= 5 ms",
            verdict(Check("", first_s * 1000, 5, " ms")),
        ],
        [
            "per call, jit dispatch (16 floats)",
            f"{be_d * 1e6:.2f} us",
            f"hand-written handler: {hw_d * 1e6:.2f} us",
            f"{be_d / hw_d:.3f}x",
            "<= 1.05x",
            verdict(Check("", be_d / hw_d, 1.05, digits=3)),
        ],
        [
            "per step, 1000-step fori_loop",
            f"{be_l * 1e6:.3f} us",
            f"hand-written handler: {hw_l * 1e6:.3f} us",
            f"{be_l / hw_l:.3f}x",
            "<= 1.05x",
            verdict(Check("", be_l / hw_l, 1.05, digits=3)),
        ],
        [
            "16 processes cold-load one module at once",
            f"{many_s:.2f} s wall; builds in the 3 rounds: {builds}",
            f"one process alone: {one_s:.2f} s; the 16 on a built cache: {warm_s:.2f} s",
            f"{many_s / one_s:.2f}x; {many_s - warm_s:+.2f} s over the built cache",
            "1 build; the excess about one process alone",
            # "About one process alone" read as at most 1.5 times it.
            verdict(
                Check("builds per round", max(r[3] for r in rounds), 1, "", 0),
                Check("excess over one process", (many_s - warm_s) / one_s, 1.5),
            ),
        ],
        [
            "per call vs jnp (dispatch / loop step)",
            f"{be_d * 1e6:.2f} / {be_l * 1e6:.3f} us",
            f"jnp: {np_d * 1e6:.2f} / {np_l * 1e6:.3f} us",
            f"{be_d / np_d:.2f}x / {be_l / np_l:.2f}x",
            "report",
            NO_TARGET,
        ],
    ]
    if "numba_kernel" in calls:
        nb_d, nb_l = calls["numba_kernel"]
        rows.append(
            [
                "numba_kernel per call / loop step (jit dispatch / 1000-step fori_loop)",
                f"{nb_d * 1e6:.2f} / {nb_l * 1e6:.3f} us",
                f"load_cpp_inline: {be_d * 1e6:.2f} / {be_l * 1e6:.3f} us; "
                f"jnp: {np_d * 1e6:.2f} / {np_l * 1e6:.3f} us",
                f"{nb_d / be_d:.3f}x / {nb_l / be_l:.3f}x vs load_cpp_inline",
                "<= 1.05x vs load_cpp_inline",
                verdict(
                    Check("per call", nb_d / be_d, 1.05, digits=3),
                    Check("per step", nb_l / be_l, 1.05, digits=3),
                ),
            ]
        )
    if pub is not None:
        ours = {"build": build_s, "hit": hit_s, "first": first_s, "import": import_s, "calls": calls}
        rows += published_rows(pub, ours)
    text = (
        "### CPU\n\n"
        f"Measured {machine_line()}, JAX {jax_version()} on CPU; "
        f"median of {args.repeat} (builds, loads) / 7 (calls) runs.\n\n" + table(rows) + "\n"
    )
    print(text)
    if args.write:
        write_generated(Path(args.write), "bench_cpu.py", text)
    shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
