"""brainevent.cuda_kernel (NVRTC) against floors measured in the same run, interleaved.

Compile side (needs libnvrtc, no GPU):
  first kernel of a fresh process   vs  raw NVRTC through ctypes in a fresh process (its start-up included)
  a further kernel, same process    vs  raw NVRTC compiling the same further kernel
  cache hit in a fresh process      (after import; must not load or start NVRTC)
GPU side (only where a GPU is present):
  per call / per 1000-step loop step  vs  the same add through load_cuda_inline

Each round runs every variant once, in turn, so a change in the machine's load reaches them
alike; figures are medians over the rounds, ratios the medians of each round's ratio to raw NVRTC.
``--baseline-src DIR`` also runs another checkout's ``src`` (e.g. ``git archive <commit> src |
tar -x -C /tmp/base``, then ``--baseline-src /tmp/base/src``) in the same rounds.

Usage: python benchmarks/bench_nvrtc.py [--rounds 5] [--arch sm_90] [--baseline-src DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import SRC, machine_line, run_python

sys.path.insert(0, str(SRC))

ADD = r"""
extern "C" __global__ void add(const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] + y[i];
}
"""
# The further kernel: three template instantiations, as in the measurement.
AXPY = r"""
template <typename T>
__global__ void axpy(const T* x, const T* y, T* out, T a, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
"""
AXPY_NAMES = ["axpy<float>", "axpy<double>", "axpy<int>"]

RAW = r"""
import ctypes, json, sys, time
start = time.perf_counter()
from cuda.pathfinder import load_nvidia_dynamic_lib
lib = ctypes.CDLL(load_nvidia_dynamic_lib("nvrtc").abs_path)
arch = sys.argv[1]

def compile_one(source, names):
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"k.cu", 0, None, None) == 0
    for n in names:
        assert lib.nvrtcAddNameExpression(prog, n.encode()) == 0
    opts = (ctypes.c_char_p * 1)(f"--gpu-architecture={arch}".encode())
    assert lib.nvrtcCompileProgram(prog, 1, opts) == 0
    size = ctypes.c_size_t()
    lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
    buf = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetCUBIN(prog, buf)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return buf.raw

compile_one(sys.argv[2], ["add"])
first = time.perf_counter() - start
t = time.perf_counter()
compile_one(sys.argv[3], json.loads(sys.argv[4]))
print(json.dumps({"first": first, "further": time.perf_counter() - t}))
"""

OURS = r"""
import json, sys, time
start = time.perf_counter()
import brainevent.nvrtc as nv
arch, cache = sys.argv[1], sys.argv[5]
nv.compile(sys.argv[2], "add", arch, build_directory=cache)
first = time.perf_counter() - start
t = time.perf_counter()
nv.compile(sys.argv[3], json.loads(sys.argv[4]), arch, build_directory=cache)
print(json.dumps({"first": first, "further": time.perf_counter() - t}))
"""

HIT = r"""
import json, os, sys, time
from pathlib import Path
import brainevent.nvrtc as nv
import brainevent.nvrtc.cache, brainevent.cache.store, brainevent.cache.manifest
t = time.perf_counter()
nv.compile(sys.argv[2], "add", sys.argv[1], build_directory=sys.argv[3])
hit = time.perf_counter() - t
libraries = {os.path.basename(line.split()[-1]) for line in open("/proc/self/maps") if "/" in line}
mapped = any(name.startswith("libnvrtc") for name in libraries)
children = [c for t in Path("/proc/self/task").iterdir() for c in (t / "children").read_text().split()]
print(json.dumps({"hit": hit, "nvrtc_loaded": mapped or bool(children)}))
"""


def compile_side(rounds: int, arch: str, baseline: str | None) -> dict[str, list[float]]:
    """Per variant ("raw", "ours", "baseline"): "<variant>_first" and "<variant>_further" seconds,
    and "hit"; one warm-up round (bytecode, page cache) is left out."""
    variants = {"ours": None, **({"baseline": baseline} if baseline else {})}
    samples: dict[str, list[float]] = {"hit": []}
    names = json.dumps(AXPY_NAMES)
    for round_ in range(rounds + 1):
        got = {"raw": json.loads(run_python(RAW, args=[arch, ADD, AXPY, names]))}
        for variant, src in variants.items():
            env = {"PYTHONPATH": src} if src else None
            with tempfile.TemporaryDirectory() as cache:
                got[variant] = json.loads(run_python(OURS, env=env, args=[arch, ADD, AXPY, names, cache]))
                if variant == "ours":
                    hit = json.loads(run_python(HIT, args=[arch, ADD, cache]))
        if hit["nvrtc_loaded"]:
            raise SystemExit("a cache hit loaded or started NVRTC: that is a bug")
        if round_ == 0:
            continue
        for variant, times in got.items():
            for what in ("first", "further"):
                samples.setdefault(f"{variant}_{what}", []).append(times[what])
        samples["hit"].append(hit["hit"])
    return samples


def gpu_side() -> dict[str, tuple[float, float]] | None:
    from brainevent.toolchain.cuda_driver import probe_devices

    probe = probe_devices()
    if not (probe.available and probe.devices):
        return None
    import jax
    import numpy as np
    from common import call_costs

    import brainevent

    cuda_source = (
        '#include <cuda_runtime.h>\n#include "brainevent/common.h"\n'
        + ADD
        + "// @BE vector_add arg arg ret stream\n"
        "void vector_add(const BE::Tensor a, const BE::Tensor b, BE::Tensor out, int64_t stream) {\n"
        "  int n = a.numel();\n"
        "  add<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(a.data_ptr<float>(), "
        "b.data_ptr<float>(), out.data_ptr<float>(), n);\n"
        "}\n"
    )
    module = brainevent.load_cuda_inline(name="bench_nvrtc_add", cuda_sources=cuda_source)
    a = jax.device_put(np.ones(1024, np.float32))
    b = jax.device_put(np.full(1024, 1e-3, np.float32))
    spec = jax.ShapeDtypeStruct(a.shape, a.dtype)
    ours = brainevent.cuda_kernel(ADD, "add", spec, launch_dims=lambda x, y: x.size, n=lambda x, y: x.size)
    return call_costs({"cuda_kernel": ours, "load_cuda_inline": module.vector_add}, a, b, calls=2000)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--baseline-src", help="another checkout's src directory, run in the same rounds")
    args = parser.parse_args()
    print(machine_line())
    samples = compile_side(args.rounds, args.arch, args.baseline_src)
    s = {k: statistics.median(v) for k, v in samples.items()}

    def ratio(variant: str, what: str) -> float:
        """The median of the rounds' ratios to raw NVRTC (the load moves both)."""
        pairs = zip(samples[f"{variant}_{what}"], samples[f"raw_{what}"], strict=True)
        return statistics.median(ours / raw for ours, raw in pairs)

    print(
        f"{'':36} {'raw NVRTC':>10} "
        + " ".join(f"{v:>18}" for v in ("ours", "baseline") if f"{v}_first" in s)
    )
    for what, label in (
        ("first", "first kernel, fresh process"),
        ("further", "further kernel, same process"),
    ):
        cells = [
            f"{1e3 * s[f'{v}_{what}']:7.1f} ms ({ratio(v, what):.2f}x)"
            for v in ("ours", "baseline")
            if f"{v}_{what}" in s
        ]
        print(f"{label:36} {1e3 * s[f'raw_{what}']:7.1f} ms " + " ".join(f"{c:>18}" for c in cells))
    targets = [
        ("first kernel <= 0.3 s and <= 1.25x raw", s["ours_first"] <= 0.3 and ratio("ours", "first") <= 1.25),
        (
            "further kernel <= 50 ms and <= 1.5x raw",
            s["ours_further"] <= 0.05 and ratio("ours", "further") <= 1.5,
        ),
        ("cache hit, fresh process, <= 2 ms, no NVRTC", s["hit"] <= 0.002),
    ]
    print(
        f"cache hit, fresh process (after import): {1e3 * s['hit']:.2f} ms, NVRTC neither loaded nor started"
    )
    for target, met in targets:
        print(f"target {target}: {'met' if met else 'NOT met'}")
    costs = gpu_side()
    if costs is None:
        print("no GPU: per-call and loop-step figures not measured")
        return
    (call, step), (ref_call, ref_step) = costs["cuda_kernel"], costs["load_cuda_inline"]
    print(
        f"per call {1e6 * call:.2f} us vs load_cuda_inline {1e6 * ref_call:.2f} us ({call / ref_call:.3f}x, "
        f"target <= 1.02x); loop step {1e6 * step:.2f} us vs {1e6 * ref_step:.2f} us "
        f"({step / ref_step:.3f}x, target <= 1.05x)"
    )


if __name__ == "__main__":
    main()
