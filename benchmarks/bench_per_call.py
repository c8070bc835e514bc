"""Per call under jax.jit: brainevent's handler against a hand-written ffi.h handler of the
same kernel, as alternating A/B rounds in one process, so that host noise cancels.

Each round times both variants back to back (the order flips every round): ``--calls``
jitted calls dispatched then waited for, and one 1000-step ``fori_loop``. The figure is the
median of the per-round ratios (brainevent / hand-written), with their spread.

  --platform gpu   the seeds' vector_add (load_cuda_inline) vs the same kernel with an ffi.h
                   handler (nvcc), in one process with brainevent's default flags (custom
                   calls in CUDA graphs) and in one with JAX's defaults (BRAINEVENT_CUDA_GRAPHS=0)
  --platform cpu   the CPU add (load_cpp_inline) vs its ffi.h twin (g++)

Target: at most 1.02x per call. Usage:
  python benchmarks/bench_per_call.py --platform gpu [--rounds 41] [--calls 500]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ADD_KERNEL, SRC, machine_line, precompile, run_python

sys.path.insert(0, str(SRC))

# XLA_FLAGS as the user set it: importing brainevent here (to build the hand-written library)
# adds its command-buffer flags to this process's environment, which the probes must not inherit.
USER_XLA_FLAGS = os.environ.get("XLA_FLAGS")

PROBE = r"""
import ctypes, json, os, sys, time
import jax, jax.numpy as jnp, numpy as np
import brainevent

platform, hand_lib, source, rounds, calls, n = sys.argv[1:7]
rounds, calls, n = int(rounds), int(calls), int(n)
jax_platform = "CUDA" if platform == "gpu" else "cpu"
hand = ctypes.CDLL(hand_lib)
jax.ffi.register_ffi_target("hand.add", jax.ffi.pycapsule(hand.HandAdd), platform=jax_platform)
if platform == "gpu":
    mod = brainevent.load_cuda_inline(name="per_call_add", cuda_sources=source)
    ours_target = "per_call_add.vector_add"
else:
    mod = brainevent.load_cpp_inline(name="per_call_add", cpp_sources=source)
    ours_target = "per_call_add.add"
a = jnp.ones(n, jnp.float32)
b = jnp.ones(n, jnp.float32)
out = jax.ShapeDtypeStruct(a.shape, a.dtype)
steps = {
    "ours": lambda x, y: jax.ffi.ffi_call(ours_target, out)(x, y),
    "hand": lambda x, y: jax.ffi.ffi_call("hand.add", out)(x, y),
}
one = {k: jax.jit(f) for k, f in steps.items()}
loop = {
    k: jax.jit(lambda x, y, f=f: jax.lax.fori_loop(0, 1000, lambda i, v: f(v, y), x))
    for k, f in steps.items()
}
for k in steps:  # compile, warm, and check both compute the same thing
    np.testing.assert_allclose(np.asarray(one[k](a, b)), 2.0)
    np.testing.assert_allclose(np.asarray(loop[k](a, b)), 1001.0)

def per_call(fn):
    t = time.perf_counter()
    for _ in range(calls):
        r = fn(a, b)
    r.block_until_ready()
    return (time.perf_counter() - t) / calls

def per_step(fn):
    t = time.perf_counter()
    loop_result = fn(a, b)
    loop_result.block_until_ready()
    return (time.perf_counter() - t) / 1000

samples = {k: {"call": [], "step": []} for k in steps}
for r in range(rounds):
    order = ("ours", "hand") if r % 2 == 0 else ("hand", "ours")
    for k in order:
        samples[k]["call"].append(per_call(one[k]))
    for k in order:
        samples[k]["step"].append(per_step(loop[k]))
print(json.dumps({"samples": samples, "xla_flags": os.environ.get("XLA_FLAGS", "")}))
"""


def build_hand_written(platform: str, tmp: Path) -> Path:
    """The hand-written ffi.h handler of the same add, compiled by the platform's compiler."""
    from brainevent.headers import xla_include_dir

    library = tmp / "libhand.so"
    if platform == "gpu":
        from bench_cuda import HAND_WRITTEN as CUDA_HAND

        from brainevent.toolchain.cuda_arch import gencode_flags, resolve_archs
        from brainevent.toolchain.nvcc import find_nvcc

        source = tmp / "hand.cu"
        source.write_text(CUDA_HAND)
        compiler = [find_nvcc().path, "-Xcompiler=-fPIC", *gencode_flags(resolve_archs(None))]
    else:
        from bench_cpu import HAND_WRITTEN as CPU_HAND

        source = tmp / "hand.cc"
        source.write_text(CPU_HAND)
        compiler = ["g++", "-fPIC"]
    command = [*compiler, "-std=c++17", "-O3", "-shared", "-isystem", str(xla_include_dir())]
    subprocess.run([*command, str(source), "-o", str(library)], check=True)
    return library


def quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4)
    return q[0], statistics.median(values), q[2]


def report(label: str, samples: dict[str, dict[str, list[float]]]) -> None:
    ours, hand = samples["ours"], samples["hand"]
    for what, unit in (("call", "per jitted call"), ("step", "per fori_loop step")):
        ratios = [o / h for o, h in zip(ours[what], hand[what], strict=True)]
        lo, med, hi = quartiles(ratios)
        print(
            f"{label:28s} {unit:20s} ours {statistics.median(ours[what]) * 1e6:7.2f} us, "
            f"hand-written {statistics.median(hand[what]) * 1e6:7.2f} us; ratio median {med:.3f}x "
            f"(IQR {lo:.3f}-{hi:.3f}, min {min(ratios):.3f}, max {max(ratios):.3f}, "
            f"{len(ratios)} rounds)"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--platform", choices=("gpu", "cpu"), default="gpu")
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--n", type=int, default=1024, help="elements per array")
    args = parser.parse_args()
    precompile()
    print(machine_line())
    if args.platform == "gpu":
        from bench_cuda import SEED_ADD

        source = SEED_ADD
        configs = {
            "brainevent's default flags": {},
            "JAX's default flags": {"BRAINEVENT_CUDA_GRAPHS": "0"},
        }
    else:
        source = ADD_KERNEL
        configs = {"CPU": {"JAX_PLATFORMS": "cpu"}}
    with tempfile.TemporaryDirectory() as tmp:
        hand = build_hand_written(args.platform, Path(tmp))
        cache = {"BRAINEVENT_CACHE_DIR": str(Path(tmp) / "cache")}
        argv = [args.platform, str(hand), source, str(args.rounds), str(args.calls), str(args.n)]
        if USER_XLA_FLAGS is None:
            os.environ.pop("XLA_FLAGS", None)
        else:
            os.environ["XLA_FLAGS"] = USER_XLA_FLAGS
            print(f"note: XLA_FLAGS is set by the user: {USER_XLA_FLAGS}")
        for label, env in configs.items():
            result = json.loads(run_python(PROBE, {**cache, **env}, argv))
            print(f"{label}: XLA_FLAGS in the probe = {result['xla_flags'] or '(none)'}")
            report(label, result["samples"])
    print("target: ratio <= 1.02x per call")


if __name__ == "__main__":
    main()
