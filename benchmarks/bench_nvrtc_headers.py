"""Header-heavy kernels through brainevent.nvrtc against raw NVRTC, measured in the same run,
interleaved (needs libnvrtc, no GPU).

For each header set (fp16, bf16, cuda/std, cooperative groups, block and warp CUB), two kernels
that include the same headers, each in a fresh process:

  first kernel (process start to cubin)   vs  raw NVRTC through ctypes (libnvrtc loaded through
                                              cuda-pathfinder, as bench_nvrtc.py's floor), without PCH
  later kernel, same process              vs  raw NVRTC with a precompiled header (``-pch``, its
                                              heap sized as NVRTC asks) made by the first kernel

Raw NVRTC is the same libnvrtc with the same include directories and options. Figures are
medians over the rounds, ratios the medians of each round's ratio to raw NVRTC.

Usage: python benchmarks/bench_nvrtc_headers.py [--rounds 3] [--arch sm_90] [--only cub_block ...]
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

# name -> (includes, first kernel's body, later kernel's body); each kernel is k(const T* x, T* o).
CASES = {
    "fp16": ("#include <cuda_fp16.h>", "__half", "o[i] = __hadd(x[i], x[i]);", "o[i] = __hmul(x[i], x[i]);"),
    "bf16": (
        "#include <cuda_bf16.h>",
        "__nv_bfloat16",
        "o[i] = __hadd(x[i], x[i]);",
        "o[i] = __float2bfloat16(__bfloat162float(x[i]) * 2.0f);",
    ),
    "cuda_std": (
        "#include <cuda/std/cstdint>\n#include <cuda/std/limits>\n#include <cuda/std/type_traits>",
        "float",
        "o[i] = cuda::std::numeric_limits<float>::max() > x[i] ? x[i] : 0.0f;",
        "o[i] = cuda::std::is_same_v<cuda::std::int32_t, int> ? -x[i] : x[i];",
    ),
    "cooperative_groups": (
        "#include <cooperative_groups.h>\n#include <cooperative_groups/reduce.h>",
        "float",
        "namespace cg = cooperative_groups; auto t = cg::tiled_partition<32>(cg::this_thread_block());\n"
        "  o[i] = cg::reduce(t, x[i], cg::plus<float>());",
        "namespace cg = cooperative_groups; auto t = cg::tiled_partition<32>(cg::this_thread_block());\n"
        "  o[i] = cg::reduce(t, x[i], cg::greater<float>());",
    ),
    "cub_block": (
        "#include <cub/block/block_reduce.cuh>",
        "float",
        "using R = cub::BlockReduce<float, 128>; __shared__ typename R::TempStorage s;\n"
        "  float v = R(s).Sum(x[i]); if (threadIdx.x == 0) o[blockIdx.x] = v;",
        "using R = cub::BlockReduce<float, 128>; __shared__ typename R::TempStorage s;\n"
        "  float v = R(s).Reduce(x[i], cuda::maximum<>{}); if (threadIdx.x == 0) o[blockIdx.x] = v;",
    ),
    "cub_warp": (
        "#include <cub/warp/warp_reduce.cuh>",
        "float",
        "using W = cub::WarpReduce<float>; __shared__ typename W::TempStorage s[4];\n"
        "  o[i] = W(s[threadIdx.x / 32]).Sum(x[i]);",
        "using W = cub::WarpReduce<float>; __shared__ typename W::TempStorage s[4];\n"
        "  o[i] = W(s[threadIdx.x / 32]).Reduce(x[i], cuda::maximum<>{});",
    ),
}


def kernel_source(case: str, which: int) -> tuple[str, str]:
    """``(source, kernel name)`` of a case's first (0) or later (1) kernel."""
    includes, ctype, *bodies = CASES[case]
    name = f"{case}_{which}"
    body = f"int i = blockIdx.x * blockDim.x + threadIdx.x;\n  {bodies[which]}"
    signature = f'extern "C" __global__ void {name}(const {ctype}* x, {ctype}* o)'
    return f"{includes}\n{signature} {{\n  {body}\n}}\n", name


RAW = r"""
import ctypes, json, os, sys, time
start = time.perf_counter()
path, arch, pch_dir = sys.argv[1:4]
dirs, kernels = json.loads(sys.argv[4]), json.loads(sys.argv[5])
try:  # found as bench_nvrtc.py's floor finds it (a user of raw NVRTC must find it too)
    from cuda.pathfinder import load_nvidia_dynamic_lib
    path = load_nvidia_dynamic_lib("nvrtc").abs_path
except ImportError:
    pass
lib = ctypes.CDLL(path)
options = [f"--gpu-architecture={arch}", *(f"-I{d}" for d in dirs)]
if pch_dir:
    options += ["-pch", f"--pch-dir={pch_dir}", "--pch-verbose=false"]
    lib.nvrtcSetPCHHeapSize(ctypes.c_size_t(1 << 30))

def compile_one(source, name, retry=True):
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"k.cu", 0, None, None) == 0
    lib.nvrtcAddNameExpression(prog, name.encode())
    opts = (ctypes.c_char_p * len(options))(*(o.encode() for o in options))
    result = lib.nvrtcCompileProgram(prog, len(options), opts)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    assert result == 0, log.value.decode()
    lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
    lib.nvrtcGetCUBIN(prog, ctypes.create_string_buffer(size.value))
    if pch_dir and lib.nvrtcGetPCHCreateStatus(prog) == 14 and retry:  # heap exhausted: as NVRTC asks
        lib.nvrtcGetPCHHeapSizeRequired(prog, ctypes.byref(size))
        lib.nvrtcSetPCHHeapSize(size)
        compile_one(source, name, retry=False)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return log.value.decode()

compile_one(*kernels[0])
first = time.perf_counter() - start
t = time.perf_counter()
log = compile_one(*kernels[1])
print(json.dumps({"first": first, "later": time.perf_counter() - t, "used_pch": "using precompiled" in log}))
"""

OURS = r"""
import json, sys, time
start = time.perf_counter()
import brainevent.nvrtc as nv
arch, cache, kernels = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
nv.compile(*kernels[0], arch, build_directory=cache)
first = time.perf_counter() - start
t = time.perf_counter()
nv.compile(*kernels[1], arch, build_directory=cache)
print(json.dumps({"first": first, "later": time.perf_counter() - t}))
"""


def measure(cases: list[str], rounds: int, arch: str) -> dict[str, dict[str, list[float]]]:
    """Per case, "<variant>_<first|later>" seconds per round; variants "raw" (no PCH),
    "raw_pch" and "ours". One unmeasured raw compile per case first warms the page cache."""
    from brainevent.nvrtc.toolkit import locate_nvrtc, runtime_include_dirs

    lib, dirs = locate_nvrtc().path, json.dumps(list(runtime_include_dirs()))
    samples: dict[str, dict[str, list[float]]] = {case: {} for case in cases}
    for round_ in range(rounds + 1):
        for case in cases:
            kernels = json.dumps([kernel_source(case, 0), kernel_source(case, 1)])
            got = {"raw": json.loads(run_python(RAW, args=[lib, arch, "", dirs, kernels]))}
            if round_ == 0:
                continue
            with tempfile.TemporaryDirectory() as pch_dir:
                got["raw_pch"] = json.loads(run_python(RAW, args=[lib, arch, pch_dir, dirs, kernels]))
            if not got["raw_pch"]["used_pch"]:
                print(f"note: raw NVRTC made no usable PCH for {case}")
            with tempfile.TemporaryDirectory() as cache:
                got["ours"] = json.loads(run_python(OURS, args=[arch, cache, kernels]))
            for variant, times in got.items():
                for what in ("first", "later"):
                    samples[case].setdefault(f"{variant}_{what}", []).append(times[what])
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--only", nargs="*", choices=sorted(CASES), help="these header sets alone")
    args = parser.parse_args()
    print(machine_line())
    samples = measure(args.only or list(CASES), args.rounds, args.arch)
    print(
        f"{'headers':20} {'raw first':>10} {'ours first':>18} {'raw PCH first':>14} {'raw PCH later':>14} "
        f"{'ours later':>18} {'raw later':>10}"
    )
    met = True
    for case, s in samples.items():
        m = {k: statistics.median(v) for k, v in s.items()}

        def ratio(ours: str, raw: str, s: dict[str, list[float]] = s) -> float:
            return statistics.median(a / b for a, b in zip(s[ours], s[raw], strict=True))

        first, later = ratio("ours_first", "raw_first"), ratio("ours_later", "raw_pch_later")
        met &= first <= 1.25 and later <= 1.2 and m["ours_later"] <= 0.25
        print(
            f"{case:20} {1e3 * m['raw_first']:7.0f} ms {1e3 * m['ours_first']:7.0f} ms ({first:.2f}x) "
            f"{1e3 * m['raw_pch_first']:11.0f} ms {1e3 * m['raw_pch_later']:11.0f} ms "
            f"{1e3 * m['ours_later']:7.0f} ms ({later:.2f}x) "
            f"{1e3 * m['raw_later']:7.0f} ms"
        )
    print(
        "targets (GPU machine): later kernel <= 1.2x raw NVRTC with PCH and <= 250 ms; first kernel "
        f"<= 1.25x raw NVRTC without PCH: {'met' if met else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
