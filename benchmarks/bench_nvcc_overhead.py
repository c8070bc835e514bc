"""What a cold ``load_cuda_inline`` costs over nvcc alone, for the seed tutorial's add kernel.

Interleaved rounds of
  (a) ``nvcc -shared -Xcompiler -fPIC -arch=ARCH`` of the same kernel with a raw-pointer
      ``extern "C"`` launcher (what a hand-built library costs), and
  (b) a cold ``load_cuda_inline`` of the kernel in a fresh process with a fresh cache
      directory (so the shared call-frame decoder is built too), for the same arch.
Both are compile-only (no GPU needed). Prints the medians and (b) / (a); the target is 1.05x.
With ``--warm-decoder`` each fresh cache directory starts with the decoder (and the toolchain
memo) of an earlier build: the cost of a module's first load once a toolchain has built one.
With ``--with-jax`` the fresh process imports JAX before the timed load, as a program that
calls the module has: the standard-library modules JAX imports (typing, subprocess, json, ...)
are then not charged to the load.

Usage: python benchmarks/bench_nvcc_overhead.py [--repeat N] [--arch sm_80] [--warm-decoder] [--with-jax]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cuda import SEED_ADD
from common import DEFAULT_ARCH, SRC, precompile, run_python

RAW = r"""
#include <cuda_runtime.h>

__global__ void add_kernel(const float* a, const float* b, float* out, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) out[idx] = a[idx] + b[idx];
}

extern "C" void vector_add(const float* a, const float* b, float* out, int n, cudaStream_t stream) {
    add_kernel<<<(n + 255) / 256, 256, 0, stream>>>(a, b, out, n);
}
"""

COLD = r"""
import sys, time
if sys.argv[4] == "jax":
    import jax
import brainevent
t = time.perf_counter()
mod = brainevent.load_cuda_inline(
    name=sys.argv[3], cuda_sources=sys.argv[1], compute_capability=sys.argv[2], auto_register=False
)
assert mod.built_now
print(time.perf_counter() - t)
"""


def nvcc_path() -> str:
    sys.path.insert(0, str(SRC))
    from brainevent.toolchain.nvcc import find_nvcc

    return find_nvcc().path


def bare_nvcc(nvcc: str, arch: str, work: Path) -> float:
    source = work / "add.cu"
    source.write_text(RAW)
    output = str(work / "add.so")
    command = [nvcc, "-shared", "-Xcompiler", "-fPIC", f"-arch={arch}", str(source), "-o", output]
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def cold_load(arch: str, seed: str | None, with_jax: bool) -> float:
    """Seconds of a cold load in a fresh process and cache directory (a copy of ``seed``, if given)."""
    cache = tempfile.mkdtemp(prefix="be-nvcc-overhead-")
    try:
        if seed is not None:
            shutil.copytree(seed, cache, dirs_exist_ok=True)
        output = run_python(
            COLD,
            {"BRAINEVENT_CACHE_DIR": cache},
            [SEED_ADD, arch, "overhead_add", "jax" if with_jax else "-"],
        )
        return float(output.split()[-1])
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def decoder_seed(arch: str) -> str:
    """A cache directory holding the shared decoder (built with another module)."""
    seed = tempfile.mkdtemp(prefix="be-nvcc-overhead-seed-")
    output = run_python(COLD, {"BRAINEVENT_CACHE_DIR": seed}, [SEED_ADD, arch, "overhead_seed", "-"])
    assert output
    shutil.rmtree(Path(seed) / "v1" / "overhead_seed")
    return seed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--arch", default=DEFAULT_ARCH)
    parser.add_argument("--warm-decoder", action="store_true", help="the decoder is already built")
    parser.add_argument("--with-jax", action="store_true", help="JAX is imported before the load")
    args = parser.parse_args()
    precompile()
    nvcc = nvcc_path()
    seed = decoder_seed(args.arch) if args.warm_decoder else None
    bare: list[float] = []
    ours: list[float] = []
    with tempfile.TemporaryDirectory() as work:
        for _ in range(args.repeat):
            bare.append(bare_nvcc(nvcc, args.arch, Path(work)))
            ours.append(cold_load(args.arch, seed, args.with_jax))
    if seed is not None:
        shutil.rmtree(seed, ignore_errors=True)
    for label, values in (("nvcc -shared, raw launcher", bare), ("cold load_cuda_inline", ours)):
        spread = f"min {min(values):.3f}, max {max(values):.3f}"
        print(f"{label:28}: median {statistics.median(values):.3f} s ({spread})")
    ratio = statistics.median(ours) / statistics.median(bare)
    decoder = "decoder built before" if seed else "decoder built too"
    decoder += ", JAX imported first" if args.with_jax else ", JAX not imported"
    print(f"cold load / nvcc alone: {ratio:.3f}x (target 1.05x, {args.repeat} rounds; {decoder})")
    # Each round's pair ran back to back: their ratio drifts less with the host's speed.
    pairs = sorted(o / b for o, b in zip(ours, bare, strict=True))
    spread = f"min {pairs[0]:.3f}, max {pairs[-1]:.3f}"
    print(f"per-round ratios: median {statistics.median(pairs):.3f}x ({spread})")


if __name__ == "__main__":
    main()
