"""Kernels written against brainevent 0.2.1's headers, through nvcc.

Without a GPU the modules are built (nvcc + link) but not run; the ``gpu`` tests run the
same kernels and compare them with NumPy.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import brainevent
from brainevent.build.optional_headers import (
    HALF_MACRO,
    names_half_type,
    needs_headers,
    optional_header_flags,
)

# A 0.2.1-style CUDA source: statement-form dispatch with half and complex cases, the
# CUDA half types, numel_checked_int() in host code, BE_CHECK_KERNEL_LAUNCH_SYNC().
KERNELS = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"

template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

template <typename C>
__global__ void conj_kernel(const C* x, C* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = C{x[i].real, -x[i].imag};
}

template <typename T>
__global__ void copy_kernel(const T* x, T* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i];
}

// @BE typed_add
void typed_add(const BE::Tensor a, const BE::Tensor b, BE::Tensor out, int64_t stream) {
    const int n = a.numel_checked_int();
    auto s = (cudaStream_t)stream;
    BE_DISPATCH_FLOATING_AND_HALF(a.dtype(), scalar_t, {
        add_kernel<scalar_t><<<(n + 255) / 256, 256, 0, s>>>(
            static_cast<const scalar_t*>(a.data_ptr()),
            static_cast<const scalar_t*>(b.data_ptr()),
            out.data_ptr<scalar_t>(), n);
    });
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE conj
void conj(const BE::Tensor x, BE::Tensor out, int64_t stream) {
    const int n = x.numel_checked_int();
    BE_DISPATCH_COMPLEX(x.dtype(), c_t, {
        conj_kernel<c_t><<<(n + 127) / 128, 128, 0, (cudaStream_t)stream>>>(
            x.data_ptr<c_t>(), out.data_ptr<c_t>(), n);
    });
    BE_CHECK_KERNEL_LAUNCH_SYNC();
}

// @BE copy_any
void copy_any(const BE::Tensor x, BE::Tensor out, int64_t stream) {
    const int n = x.numel_checked_int();
    BE_DISPATCH_ALL(x.dtype(), any_t, {
        copy_kernel<any_t><<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
            x.data_ptr<any_t>(), out.data_ptr<any_t>(), n);
    });
    BE_CHECK_KERNEL_LAUNCH();
}

__global__ void fill_half(__half* out, __half v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = v;
}

// A float16 attribute as 0.2.1 passed it (raw bits) and as a typed __half.
// @BE fill_bits ret attr.value:float16 stream
void fill_bits(BE::Tensor out, uint16_t value, int64_t stream) {
    fill_half<<<1, 256, 0, (cudaStream_t)stream>>>(out.data_ptr<BE::float16_t>(),
                                                   __ushort_as_half(value), out.numel_checked_int());
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE fill_typed
void fill_typed(BE::Tensor out, __half value, int64_t stream) {
    fill_half<<<1, 256, 0, (cudaStream_t)stream>>>(out.data_ptr<__half>(), value, out.numel_checked_int());
    BE_CHECK_KERNEL_LAUNCH();
}

__global__ void fill_bf16(__nv_bfloat16* out, __nv_bfloat16 v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = v;
}

// @BE fill_bf16_typed
void fill_bf16_typed(BE::Tensor out, BE::bfloat16_t value, int64_t stream) {
    fill_bf16<<<1, 256, 0, (cudaStream_t)stream>>>(out.data_ptr<BE::bfloat16_t>(), value,
                                                   out.numel_checked_int());
    BE_CHECK_KERNEL_LAUNCH();
}
"""

SPECS = {
    "typed_add": ["arg", "arg", "ret", "stream"],
    "conj": ["arg", "ret", "stream"],
    "copy_any": ["arg", "ret", "stream"],
    "fill_bits": ["ret", "attr.value:float16", "stream"],
    "fill_typed": ["ret", "attr.value:float16", "stream"],
    "fill_bf16_typed": ["ret", "attr.value:bfloat16", "stream"],
}

# Names no half type, so it is compiled without CUDA's half headers.
NO_HALF = r"""
#include "brainevent/common.h"
__global__ void twice_kernel(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2;
}
// @BE twice
void twice(BE::Tensor x, int64_t stream) {
    BE_DISPATCH_FLOATING(x.dtype(), real_t, {
        twice_kernel<<<1, 32, 0, (cudaStream_t)stream>>>(reinterpret_cast<float*>(x.data_ptr<real_t>()), 1);
    });
}
"""


def _build_log(name: str, source: str, **options: object) -> str:
    mod = brainevent.load_cuda_inline(
        name=name,
        cuda_sources=source,
        compute_capability="sm_80",
        auto_register=False,
        verbose=True,
        **options,
    )
    return (mod.cache_dir / "build.log").read_text()  # with verbose=True: every command


@pytest.mark.nvcc
def test_0_2_1_style_cuda_source_builds_with_nvcc() -> None:
    mod = brainevent.load_cuda_inline(
        name="compat_headers_cu", cuda_sources=KERNELS, compute_capability="sm_80", auto_register=False
    )
    assert mod.path.is_file()
    assert mod.specs == SPECS
    params = {p.name: p.cxx_type for p in mod.functions["fill_bits"].params}
    assert params["value"] == "uint16_t"


@pytest.mark.nvcc
def test_half_headers_stay_out_of_a_unit_that_needs_none() -> None:
    assert "-DBE_CUDA_HALF_TYPES=0" in _build_log("compat_no_half", NO_HALF)
    uses_half = NO_HALF.replace("int64_t stream) {", "int64_t stream) {\n    BE::float16_t unused{};")
    assert "BE_CUDA_HALF_TYPES" not in _build_log("compat_uses_half", uses_half)


@pytest.mark.nvcc
def test_a_users_own_setting_of_the_half_macro_wins() -> None:
    log = _build_log("compat_force_half", NO_HALF, extra_cuda_cflags=["-DBE_CUDA_HALF_TYPES=1"])
    assert "-DBE_CUDA_HALF_TYPES=1" in log and "-DBE_CUDA_HALF_TYPES=0" not in log


@pytest.mark.nvcc
def test_half_dispatch_without_the_half_headers_says_how_to_fix() -> None:
    src = KERNELS.replace(
        '#include "brainevent/common.h"', '#define BE_CUDA_HALF_TYPES 0\n#include "brainevent/common.h"'
    )
    src = src[: src.index("__global__ void fill_half")]  # drop the kernels that name __half directly
    with pytest.raises(
        brainevent.CompileError, match=r"needs the CUDA half types: compile with -DBE_CUDA_HALF_TYPES=1"
    ):
        brainevent.load_cuda_inline(
            name="compat_half_off", cuda_sources=src, compute_capability="sm_80", auto_register=False
        )


@pytest.mark.parametrize(
    ("word", "needs"),
    [
        ("float16_t", True),
        ("bfloat16_t", True),
        ("__half", True),
        ("__half2float", True),
        ("__float2bfloat16", True),
        ("__nv_bfloat162", True),
        ("__hadd", True),
        ("hsqrt", True),
        ("h2exp", True),
        ("BE_DISPATCH_ALL", True),
        ("BE_DISPATCH_FLOATING_AND_HALF", True),
        ("CUDART_ZERO_FP16", True),
        ("__host__", False),
        ("BE_DISPATCH_ALL_TYPES", False),
        ("float", False),
        ("hidden", False),
        ("h2o", True),  # a false positive only costs compile time
    ],
)
def test_half_word_detection(word: str, needs: bool) -> None:
    assert names_half_type(word) is needs


def needs_half(texts: list[str]) -> bool:
    return needs_headers(HALF_MACRO, texts)


def test_half_detection_reads_code_and_directives_not_comments() -> None:
    assert not needs_half(["// half of the rows, __half later\n/* bf16 */ void f(float x);\n"])
    assert needs_half(["void f(__half x);"])
    assert needs_half(["#define MY_DISPATCH \\\n    BE_DISPATCH_ALL\nvoid f(float x);"])
    assert needs_half(["#include <cuda_fp16.h>\nvoid f(float x);"])
    assert needs_half(["#define BE_CUDA_HALF_TYPES 0\nvoid f(float x);"])  # theirs to decide


def test_half_detection_follows_project_headers(tmp_path: Path) -> None:
    (tmp_path / "mine.h").write_text("using my_t = BE::float16_t;\n")
    text = '#include "mine.h"\nvoid f(float x);\n'

    # The complex and checks macros are decided apart (tests/build/test_optional_headers.py).
    def half(*args: object) -> list[str]:
        flags = optional_header_flags(*args, cuda=True)  # type: ignore[arg-type]
        return [f for f in flags if "HALF" in f]

    assert half(text, tmp_path, [], []) == []
    assert half("void f(float x);", tmp_path, [], []) == ["-DBE_CUDA_HALF_TYPES=0"]
    assert half("void f(float x);", None, [], ["-DBE_CUDA_HALF_TYPES=1"]) == []


# ---- on a GPU ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpu_mod() -> brainevent.CompiledModule:
    return brainevent.load_cuda_inline(name="compat_headers_gpu", cuda_sources=KERNELS)


def _cuda(x: np.ndarray) -> jax.Array:
    return jax.device_put(jnp.asarray(x), jax.devices("gpu")[0])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64])
def test_gpu_dispatch_floating_and_half(gpu_mod: brainevent.CompiledModule, dtype: type) -> None:
    a = np.linspace(-4, 4, 1000).astype(dtype)
    b = np.linspace(1, 2, 1000).astype(dtype)
    with jax.enable_x64(True):
        got = np.asarray(gpu_mod.typed_add(_cuda(a), _cuda(b), outs=jax.ShapeDtypeStruct(a.shape, a.dtype)))
    np.testing.assert_array_equal(got, (a + b).astype(dtype))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_gpu_dispatch_complex(gpu_mod: brainevent.CompiledModule, dtype: type) -> None:
    x = (np.arange(300) - 1j * np.arange(300)).astype(dtype)
    with jax.enable_x64(True):
        got = np.asarray(gpu_mod.conj(_cuda(x), outs=jax.ShapeDtypeStruct(x.shape, x.dtype)))
    np.testing.assert_array_equal(got, np.conj(x))


@pytest.mark.gpu
@pytest.mark.parametrize(
    "dtype", [np.float16, ml_dtypes.bfloat16, np.bool_, np.uint8, np.int64, np.complex128]
)
def test_gpu_dispatch_all(gpu_mod: brainevent.CompiledModule, dtype: type) -> None:
    x = (np.arange(77) % 3).astype(dtype)
    with jax.enable_x64(True):
        got = np.asarray(gpu_mod.copy_any(_cuda(x), outs=jax.ShapeDtypeStruct(x.shape, x.dtype)))
    np.testing.assert_array_equal(got, x)


@pytest.mark.gpu
def test_gpu_dispatch_rejects_an_integer_for_half_floating(gpu_mod: brainevent.CompiledModule) -> None:
    x = np.ones(4, np.int32)
    with pytest.raises(
        jax.errors.JaxRuntimeError, match=r"BE_DISPATCH_FLOATING_AND_HALF: unsupported dtype int32"
    ):
        gpu_mod.typed_add(_cuda(x), _cuda(x), outs=jax.ShapeDtypeStruct(x.shape, x.dtype)).block_until_ready()


@pytest.mark.gpu
@pytest.mark.parametrize("fn", ["fill_bits", "fill_typed"])
def test_gpu_float16_attribute_as_bits_or_typed(gpu_mod: brainevent.CompiledModule, fn: str) -> None:
    out = jax.ShapeDtypeStruct((8,), jnp.float16)
    with jax.default_device(jax.devices("gpu")[0]):
        from_float = np.asarray(getattr(gpu_mod, fn)(value=1.5, outs=out))
        from_bits = np.asarray(jax.ffi.ffi_call(f"compat_headers_gpu.{fn}", out)(value=np.uint16(0x3E00)))
    np.testing.assert_array_equal(from_float, np.full(8, 1.5, np.float16))
    np.testing.assert_array_equal(from_bits, np.full(8, 1.5, np.float16))


@pytest.mark.gpu
def test_gpu_bfloat16_typed_attribute(gpu_mod: brainevent.CompiledModule) -> None:
    out = jax.ShapeDtypeStruct((8,), jnp.bfloat16)
    with jax.default_device(jax.devices("gpu")[0]):
        got = np.asarray(gpu_mod.fill_bf16_typed(value=-2.25, outs=out))
    np.testing.assert_array_equal(got, np.full(8, -2.25, ml_dtypes.bfloat16))
