"""CPU benchmarks: cold build, cache-hit load in a fresh process, per-call overhead.

Every figure is a ratio against a baseline measured in the same run:
  cold build      vs  `g++ -c` of the user's source alone (same flags)
  cache hit       vs  the 2 ms target (absolute), and dlopen+register of the same .so
  per-call        vs  a hand-written XLA FFI handler (ffi.h) and vs jnp, under jax.jit

Usage: python benchmarks/bench_cpu.py [--write docs/benchmarks-cpu.md]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import SRC, machine_line, median_time, precompile, run_python, table

sys.path.insert(0, str(SRC))

KERNEL = r"""
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


def cold_build(repeat: int) -> tuple[float, float]:
    import brainevent
    from brainevent.headers import INCLUDE_DIR

    def build() -> None:
        with tempfile.TemporaryDirectory() as cache:
            mod = brainevent.load_cpp_inline(
                name="bench_add", cpp_sources=KERNEL, build_directory=cache, auto_register=False
            )
            assert mod.built_now

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

    build()  # warm the toolchain memo and the OS file cache
    return median_time(build, repeat), median_time(gxx_alone, repeat)


def cache_hit(repeat: int, cache: str) -> tuple[float, float, float, float]:
    """(first load incl. lazy imports, a later module's load, import brainevent, dlopen+register)."""
    import statistics

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


def per_call(cache: str, n: int, calls: int) -> dict[str, float]:
    import ctypes

    import jax
    import jax.numpy as jnp

    import brainevent
    from brainevent.toolchain import xla_include_dir

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

    def loop(step):  # 1000 dependent steps inside one executable: no dispatch in the figure
        @jax.jit
        def run(a, b):
            return jax.lax.fori_loop(0, 1000, lambda i, x: step(x, b), a)

        return run

    variants = {
        "brainevent": lambda x, y: jax.ffi.ffi_call("bench_add.add", out)(x, y),
        "hand-written ffi.h": lambda x, y: jax.ffi.ffi_call("hand.add", out)(x, y),
        "jnp": lambda x, y: x + y,
    }
    results = {}
    for label, step in variants.items():
        one = jax.jit(step)
        one(a, b).block_until_ready()
        per_dispatch = (
            median_time(lambda one=one: [one(a, b) for _ in range(calls)][-1].block_until_ready(), 7) / calls
        )
        looped = loop(step)
        looped(a, b).block_until_ready()
        per_step = median_time(lambda looped=looped: looped(a, b).block_until_ready(), 7) / 1000
        results[label] = (per_dispatch, per_step)
    shutil.rmtree(tmp, ignore_errors=True)
    return results  # type: ignore[return-value]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", help="also write the markdown table to this file")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    precompile()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    cache = tempfile.mkdtemp(prefix="be-bench-")
    os.environ["BRAINEVENT_CACHE_DIR"] = cache

    build_s, gxx_s = cold_build(args.repeat)
    first_s, hit_s, import_s, raw_s = cache_hit(args.repeat, cache)
    calls = per_call(cache, n=16, calls=2000)
    from bench_concurrency import wall_time

    one_s, _ = wall_time(1)
    many_s, many_built = wall_time(16)

    be_d, be_l = calls["brainevent"]
    hw_d, hw_l = calls["hand-written ffi.h"]
    np_d, np_l = calls["jnp"]
    rows = [
        [
            "cold build (small kernel)",
            f"{build_s * 1000:.0f} ms",
            f"`g++ -c` of the source alone: {gxx_s * 1000:.0f} ms",
            f"{build_s / gxx_s:.2f}x (+{(build_s - gxx_s) * 1000:.0f} ms)",
            "within +500 ms",
        ],
        [
            "cache-hit load per module, fresh process",
            f"{hit_s * 1000:.2f} ms",
            f"dlopen + register: {raw_s * 1000:.2f} ms",
            f"{hit_s / raw_s:.2f}x",
            "<= 2 ms",
        ],
        [
            "first cache-hit load, fresh process (loads the loader modules)",
            f"{first_s * 1000:.1f} ms",
            f"`import brainevent` alone: {import_s * 1000:.1f} ms",
            "-",
            "report",
        ],
        [
            "per call, jit dispatch (16 floats)",
            f"{be_d * 1e6:.2f} us",
            f"hand-written handler: {hw_d * 1e6:.2f} us",
            f"{be_d / hw_d:.3f}x",
            "<= 1.05x",
        ],
        [
            "per step, 1000-step fori_loop",
            f"{be_l * 1e6:.3f} us",
            f"hand-written handler: {hw_l * 1e6:.3f} us",
            f"{be_l / hw_l:.3f}x",
            "<= 1.05x",
        ],
        [
            "16 processes cold-load one module at once",
            f"{many_s:.2f} s wall, {many_built} build(s)",
            f"one process alone: {one_s:.2f} s",
            f"{many_s / one_s:.2f}x",
            "one build, wall close to 1x",
        ],
        [
            "per call vs jnp (dispatch / loop step)",
            f"{be_d * 1e6:.2f} / {be_l * 1e6:.3f} us",
            f"jnp: {np_d * 1e6:.2f} / {np_l * 1e6:.3f} us",
            f"{be_d / np_d:.2f}x / {be_l / np_l:.2f}x",
            "report",
        ],
    ]
    text = (
        "### CPU\n\n"
        f"Measured {machine_line()}; JAX on CPU; median of {args.repeat} (loads) / 7 (calls) runs.\n\n"
        + table(rows, ["what", "brainevent", "baseline (same run)", "ratio", "target"])
        + "\n"
    )
    print(text)
    if args.write:
        Path(args.write).write_text(text)
    shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
