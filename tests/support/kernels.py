"""Kernel sources that several test files build or parse, written once.

Each constant is the whole text of a source file, as a user would pass it to a loader
(``cpp_sources=`` / ``cuda_sources=``). A test that needs a variant derives it from one of
these (``.replace(...)`` or ``+``) and keeps its own module name, so its cache entries and
FFI targets stay its own.
"""

from __future__ import annotations

# brainevent 0.2.1's CUDA tutorial, verbatim: `vector_add(a, b) -> out` on the given stream.
# The line numbers matter: tests point at line 7 (`if (idx < n)`) and at the signature on 11.
CUDA_VECTOR_ADD = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"

__global__ void add_kernel(const float* a, const float* b, float* out, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) out[idx] = a[idx] + b[idx];
}

// @BE vector_add arg arg ret stream
void vector_add(const BE::Tensor a, const BE::Tensor b,
                BE::Tensor out, int64_t stream) {
    int n = a.numel();
    add_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        static_cast<const float*>(a.data_ptr()),
        static_cast<const float*>(b.data_ptr()),
        static_cast<float*>(out.data_ptr()), n);
}
"""

# The tutorial's kernel with its launch checked, so that a failed launch raises.
CUDA_VECTOR_ADD_CHECKED = CUDA_VECTOR_ADD.replace(
    "out.data_ptr()), n);\n}", "out.data_ptr()), n);\n    BE_CHECK_KERNEL_LAUNCH();\n}"
)

# `scale(x, factor) -> out` on the GPU, any length, launch checked.
CUDA_SCALE = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"
__global__ void scale_kernel(const float* x, float* out, float f, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] * f;
}
// @BE scale arg ret attr.factor:float32 stream
void scale(const BE::Tensor x, BE::Tensor out, float factor, int64_t stream) {
    const int64_t n = x.numel();
    scale_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), factor, n);
    BE_CHECK_KERNEL_LAUNCH();
}
"""

# `scale(x, factor) -> out` on the CPU; works on any rank (a batched call sees one flat buffer).
CPU_SCALE = r"""
#include "brainevent/common.h"
// @BE scale arg ret attr.factor:float32
void scale(const BE::Tensor x, BE::Tensor out, float factor) {
    const float* in = x.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] * factor;
}
"""

assert "BE_CHECK_KERNEL_LAUNCH" in CUDA_VECTOR_ADD_CHECKED  # the replace above found its anchor
