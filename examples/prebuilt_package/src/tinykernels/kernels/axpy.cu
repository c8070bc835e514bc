#include <cuda_runtime.h>
#include "brainevent/common.h"

__global__ void axpy_kernel(const float* x, const float* y, float* out, float a, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}

// @BE axpy arg arg ret attr.a:float32 stream
void axpy(const BE::Tensor x, const BE::Tensor y, BE::Tensor out, float a, int64_t stream) {
    int64_t n = x.numel();
    axpy_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), a, n);
    BE_CHECK_KERNEL_LAUNCH();
}
