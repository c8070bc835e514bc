"""CUDA modules made of several languages: .cu (nvcc), .cpp (nvcc, CUDA headers on the path),
.c (the host C compiler); OpenMP in a CUDA module; link failures in the user's terms.

The `nvcc` tests build for sm_80 without a GPU; the `gpu` ones run the same modules and
compare with NumPy.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

import brainevent
from brainevent.errors import CompileError

ARCH = "sm_80"

KERNEL_CU = r"""
#include "brainevent/common.h"
extern "C" float c_factor(void);   // scale.c
int blocks_for(int64_t n);          // launch.cpp
__global__ void scale_kernel(const float* x, float* y, int64_t n, float k) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = k * x[i];
}
// @BE scale arg ret stream
void scale(const BE::Tensor x, BE::Tensor out, cudaStream_t stream) {
    int64_t n = x.numel();
    scale_kernel<<<blocks_for(n), 256, 0, stream>>>(
        static_cast<const float*>(x.data_ptr()), static_cast<float*>(out.data_ptr()), n, c_factor());
}
"""

LAUNCH_CPP = r"""
#include "brainevent/common.h"
#include <cuda_runtime.h>
int blocks_for(int64_t n) { return static_cast<int>((n + 255) / 256); }
// @BE zeros ret stream
void zeros(BE::Tensor out, cudaStream_t stream) {
    cudaMemsetAsync(out.data_ptr(), 0, out.numel() * sizeof(float), stream);
}
"""

SCALE_C = r"""
#include <omp.h>
float c_factor(void) {
    float k = 0.0f;
    #pragma omp parallel reduction(+ : k)
    { k += 2.5f / omp_get_num_threads(); }
    return k;
}
"""


def _write(directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(textwrap.dedent(text))
    return directory


@pytest.fixture(scope="module")
def mixed_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write(
        tmp_path_factory.mktemp("mixed"),
        {"kernel.cu": KERNEL_CU, "launch.cpp": LAUNCH_CPP, "scale.c": SCALE_C},
    )


@pytest.mark.nvcc
def test_a_cu_cpp_c_module_with_openmp_builds(mixed_dir: Path) -> None:
    mod = brainevent.load_cuda_dir(mixed_dir, name="mixed_cuda", compute_capability=ARCH, openmp=True)
    assert sorted(mod.functions) == ["scale", "zeros"]
    assert mod.functions["zeros"].source_file == str(mixed_dir / "launch.cpp")


@pytest.mark.nvcc
def test_without_openmp_the_runtime_is_an_undefined_symbol(mixed_dir: Path) -> None:
    with pytest.raises(
        CompileError, match=r"failed: undefined symbol 'omp_get_num_threads', used in .*scale\.c"
    ):
        brainevent.load_cuda_dir(mixed_dir, name="mixed_no_omp", compute_capability=ARCH)


@pytest.mark.nvcc
def test_link_errors_of_cuda_files_name_the_cause_first(tmp_path: Path) -> None:
    header = (
        "#pragma once\nenum DType { F32, F64 };\nint sizeof_dtype(DType t) { return t == F32 ? 4 : 8; }\n"
    )
    d = _write(
        tmp_path,
        {
            "common.h": header,
            "a.cu": '#include "brainevent/common.h"\n#include "common.h"\n'
            "// @BE fa ret stream\nvoid fa(BE::Tensor out, cudaStream_t s) { (void)sizeof_dtype(F32); }\n",
            "b.cu": '#include "common.h"\nint twice(DType t) { return 2 * sizeof_dtype(t); }\n',
        },
    )
    with pytest.raises(CompileError) as info:
        brainevent.load_cuda_dir(d, name="cu_dup", compute_capability=ARCH)
    assert (
        str(info.value)
        .splitlines()[0]
        .startswith(
            f"compiling module 'cu_dup' failed: multiple definition of 'sizeof_dtype(DType)': defined in "
            f"{d / 'b.cu'} and {d / 'a.cu'}."
        )
    )


INLINE_CU = r"""
#include <cuda_runtime.h>
#include <cstdint>
__global__ void add_one_kernel(const float* x, float* y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + 1.0f;
}
void add_one_launch(const float* x, float* y, int64_t n, cudaStream_t s) {
    add_one_kernel<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
}
"""

INLINE_CPP = r"""
#include "brainevent/common.h"
#include <cuda_runtime.h>  // a .cpp unit is host C++: nvcc pre-includes this for .cu units only
void add_one_launch(const float* x, float* y, int64_t n, cudaStream_t s);
// @BE add_one arg ret stream
void add_one(const BE::Tensor x, BE::Tensor out, cudaStream_t s) {
    add_one_launch(static_cast<const float*>(x.data_ptr()), static_cast<float*>(out.data_ptr()),
                   x.numel(), s);
}
"""


@pytest.mark.nvcc
def test_cuda_inline_with_cpp_sources_builds() -> None:
    mod = brainevent.load_cuda_inline(
        "cu_cpp_sources", cuda_sources=INLINE_CU, cpp_sources=INLINE_CPP, compute_capability=ARCH
    )
    assert list(mod.functions) == ["add_one"]
    assert mod.functions["add_one"].source_file == "cu_cpp_sources_host.cpp"


@pytest.mark.gpu
def test_mixed_modules_run_on_the_gpu(mixed_dir: Path) -> None:
    import jax
    import jax.numpy as jnp

    mod = brainevent.load_cuda_dir(mixed_dir, name="mixed_cuda_gpu", openmp=True)
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(jax.jit(mod.scale)(jnp.asarray(x))), 2.5 * x, rtol=1e-5)
    zeros = mod.zeros(outs=[jax.ShapeDtypeStruct((17,), jnp.float32)])
    np.testing.assert_array_equal(np.asarray(zeros[0]), np.zeros(17, np.float32))
    inline = brainevent.load_cuda_inline("cu_cpp_sources_gpu", cuda_sources=INLINE_CU, cpp_sources=INLINE_CPP)
    np.testing.assert_allclose(np.asarray(jax.jit(inline.add_one)(jnp.asarray(x))), x + 1, rtol=1e-6)


def test_archs_are_compiled_in_parallel_only_with_cores_to_spare() -> None:
    import os

    from brainevent.platforms.cuda import arch_thread_flags

    cores = os.cpu_count() or 1
    assert arch_thread_flags(1, 1) == []
    assert arch_thread_flags(3, 1) == ([f"--threads={min(3, cores)}"] if cores > 1 else [])
    assert arch_thread_flags(2, cores) == []  # ninja already keeps every core busy


@pytest.mark.nvcc
def test_a_two_arch_build_has_both_archs() -> None:
    from brainevent.toolchain.fatbin import fatbin_entries

    mod = brainevent.load_cuda_inline(
        "two_archs", cuda_sources=INLINE_CU + INLINE_CPP, compute_capability=["sm_80", "sm_90"]
    )
    assert {f"{e.kind} {e.arch}" for e in fatbin_entries(Path(mod.path))} >= {"sass 80", "sass 90"}
