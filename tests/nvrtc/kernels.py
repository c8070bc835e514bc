"""The tutorial's kernels (docs/nvrtc.md), shared by the NVRTC tests."""

VECTOR_ADD = r"""
extern "C" __global__ void add(const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] + y[i];
}
"""

AXPY = r"""
template <typename T>
__global__ void axpy(const T* x, const T* y, T* out, T a, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
"""

# A block-wide sum: one partial sum per block, BLOCK a template constant.
BLOCK_SUM = r"""
template <typename T, int BLOCK>
__global__ void block_sum(const T* x, T* partial, long long n) {
  __shared__ T tile[BLOCK];
  long long i = blockIdx.x * (long long)BLOCK + threadIdx.x;
  tile[threadIdx.x] = i < n ? x[i] : T(0);
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) tile[threadIdx.x] += tile[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = tile[0];
}
"""
