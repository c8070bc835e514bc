"""brainevent.cuda_kernel (NVRTC) against floors measured in the same run, interleaved.

Compile side (needs libnvrtc, no GPU):
  first kernel of a fresh process   vs  raw NVRTC through ctypes in a fresh process (its start-up included)
  a further kernel, same process    vs  raw NVRTC compiling the same further kernel
  cache hit in a fresh process      (after import; must not load or start NVRTC)
GPU side (only where a GPU is present):
  per call / per 1000-step loop step  vs  the same add through load_cuda_inline

Each round runs every variant once, in turn, so a change in the machine's load reaches them
alike; figures are medians over the rounds.

Usage: python benchmarks/bench_nvrtc.py [--rounds 5] [--arch sm_90]
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
import json, sys, time
import brainevent.nvrtc as nv
import brainevent.nvrtc.cache, brainevent.cache.store, brainevent.cache.manifest, brainevent.build.includes
from brainevent.nvrtc import library
t = time.perf_counter()
nv.compile(sys.argv[2], "add", sys.argv[1], build_directory=sys.argv[3])
hit = time.perf_counter() - t
maps = open("/proc/self/maps").read()
print(json.dumps({"hit": hit, "nvrtc_loaded": library._bound is not None or "libnvrtc" in maps}))
"""


def compile_side(rounds: int, arch: str) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {k: [] for k in ("raw_first", "raw_further", "first", "further", "hit")}
    names = json.dumps(AXPY_NAMES)
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as cache:
            raw = json.loads(run_python(RAW, args=[arch, ADD, AXPY, names]))
            ours = json.loads(run_python(OURS, args=[arch, ADD, AXPY, names, cache]))
            hit = json.loads(run_python(HIT, args=[arch, ADD, cache]))
        if hit["nvrtc_loaded"]:
            raise SystemExit("a cache hit loaded NVRTC: that is a bug")
        samples["raw_first"].append(raw["first"])
        samples["raw_further"].append(raw["further"])
        samples["first"].append(ours["first"])
        samples["further"].append(ours["further"])
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
    args = parser.parse_args()
    print(machine_line())
    s = {k: statistics.median(v) for k, v in compile_side(args.rounds, args.arch).items()}
    rows = [
        ("first kernel, fresh process", s["first"], s["raw_first"], "<= 0.3 s", s["first"] <= 0.3),
        (
            "further kernel, same process",
            s["further"],
            s["raw_further"],
            "<= 50 ms and <= 1.5x raw",
            s["further"] <= 0.05 and s["further"] <= 1.5 * s["raw_further"],
        ),
        ("cache hit, fresh process (after import)", s["hit"], None, "<= 2 ms, no NVRTC", s["hit"] <= 0.002),
    ]
    print(f"{'':42} {'cuda_kernel':>12} {'raw NVRTC':>10} {'ratio':>7}  target")
    for label, ours, floor, target, met in rows:
        ratio = f"{ours / floor:.2f}x" if floor else "-"
        floor_text = f"{1e3 * floor:.1f} ms" if floor else "-"
        verdict = "met" if met else "NOT met"
        print(f"{label:42} {1e3 * ours:>9.1f} ms {floor_text:>10} {ratio:>7}  {target}: {verdict}")
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
