"""Which of CUDA's and CCCL's headers NVRTC compiles (docs/nvrtc.md lists them): the number
types, cuda/std, cooperative groups, and CUB's block- and warp-level algorithms. The host-side
headers (<cub/cub.cuh>, device-wide CUB, Thrust's containers and algorithms) fail with a
CompileError that names what to include instead. Compile-only: no GPU needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from brainevent.errors import CompileError

from .kernels import skip_without_nvrtc

KERNEL = 'extern "C" __global__ void k(const float* x, float* o) {{\n  int i = threadIdx.x;\n  {}\n}}\n'

# name -> (headers, the kernel's body using them)
WORKING = {
    "fp16": (["cuda_fp16.h"], "o[i] = __half2float(__hadd(__float2half(x[i]), __float2half(1.0f)));"),
    "bf16": (["cuda_bf16.h"], "o[i] = __bfloat162float(__float2bfloat16(x[i]) * __float2bfloat16(2.0f));"),
    "fp8": (["cuda_fp8.h"], "o[i] = float(__nv_fp8_e4m3(x[i])) + float(__nv_fp8_e5m2(x[i]));"),
    "cuda_std": (
        ["cuda/std/cstdint", "cuda/std/limits", "cuda/std/array", "cuda/std/type_traits"],
        "cuda::std::array<cuda::std::int32_t, 2> a{1, 2};\n"
        "  using I = cuda::std::int32_t;\n"
        "  o[i] = cuda::std::is_same_v<I, int> ? x[i] + a[1] : cuda::std::numeric_limits<float>::max();",
    ),
    "cooperative_groups": (
        ["cooperative_groups.h", "cooperative_groups/reduce.h"],
        "namespace cg = cooperative_groups;\n"
        "  auto tile = cg::tiled_partition<32>(cg::this_thread_block());\n"
        "  o[i] = cg::reduce(tile, x[i], cg::plus<float>());",
    ),
    "cub_block": (
        ["cub/block/block_reduce.cuh", "cub/block/block_scan.cuh"],
        "using R = cub::BlockReduce<float, 128>;\n  using S = cub::BlockScan<float, 128>;\n"
        "  __shared__ union { R::TempStorage r; S::TempStorage s; } t;\n  float v;\n"
        "  S(t.s).InclusiveSum(x[i], v);\n  __syncthreads();\n  float total = R(t.r).Sum(v);\n"
        "  if (i == 0) o[0] = total;",
    ),
    "cub_warp": (
        ["cub/warp/warp_reduce.cuh", "cub/warp/warp_scan.cuh"],
        "using W = cub::WarpReduce<float>;\n  __shared__ W::TempStorage t[4];\n"
        "  o[i] = W(t[i / 32]).Sum(x[i]);",
    ),
}
# A host-side header -> what the error must tell to include instead.
HOST_SIDE = {
    "cub/cub.cuh": "<cub/block/block_reduce.cuh>",
    "cub/device/device_reduce.cuh": "<cub/block/block_reduce.cuh>",
    "thrust/device_vector.h": "<cuda/std/",
}


@pytest.fixture(scope="module", autouse=True)
def _nvrtc() -> None:
    from brainevent.nvrtc.toolkit import runtime_include_dirs

    skip_without_nvrtc()
    if not runtime_include_dirs():
        pytest.skip("needs the CUDA runtime headers and CCCL (NVIDIA's runtime and CCCL wheels)")


def _source(headers: list[str], body: str) -> str:
    return "".join(f"#include <{h}>\n" for h in headers) + KERNEL.format(body)


@pytest.mark.parametrize("case", sorted(WORKING))
def test_a_device_side_header_compiles(case: str, tmp_path: Path) -> None:
    import brainevent.nvrtc as nv

    compiled = nv.compile(_source(*WORKING[case]), "k", "sm_80", build_directory=str(tmp_path))
    assert compiled.kind == "cubin" and compiled.code[:4] == b"\x7fELF"


@pytest.mark.parametrize("header", sorted(HOST_SIDE))
def test_a_host_side_header_names_what_to_include_instead(header: str, tmp_path: Path) -> None:
    import brainevent.nvrtc as nv

    with pytest.raises(CompileError) as caught:
        nv.compile(_source([header], "o[i] = x[i];"), "k", "sm_80", build_directory=str(tmp_path))
    message = str(caught.value)
    assert f"<{header}> holds host code" in message and HOST_SIDE[header] in message, message[:600]
