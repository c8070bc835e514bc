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

# An accumulating kernel: its result must start at zero (cuda_kernel's zeros=).
HISTOGRAM = r"""
extern "C" __global__ void histogram(const int* x, int* counts, long long n, int bins) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n && x[i] >= 0 && x[i] < bins) atomicAdd(&counts[x[i]], 1);
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


def slow_kernel(depth: int = 200, kernels: int = 8) -> tuple[str, list[str]]:
    """A source NVRTC takes many seconds over (about 17 s on 2 cores for the defaults): every
    one of ``kernels`` instantiations unrolls a ``depth``-deep template chain 64 times."""
    source = (
        "template <int N> struct Step { __device__ static float run(float x) "
        "{ return Step<N - 1>::run(x * 1.0001f + (float)N); } };\n"
        "template <> struct Step<0> { __device__ static float run(float x) { return x; } };\n"
        "template <int K> __global__ void slow(float* o) {\n"
        "  float v = o[threadIdx.x];\n"
        "  #pragma unroll\n"
        f"  for (int i = 0; i < 64; ++i) v = Step<{depth}>::run(v) * (i + K);\n"
        "  o[threadIdx.x] = v;\n"
        "}\n"
    )
    return source, [f"slow<{k}>" for k in range(kernels)]


def skip_without_nvrtc() -> None:
    """Skip the calling module's tests where no usable libnvrtc is found."""
    import pytest

    from brainevent.errors import ToolchainError
    from brainevent.nvrtc.process import nvrtc_info

    try:
        nvrtc_info()
    except ToolchainError as exc:
        pytest.skip(f"needs libnvrtc (pip install nvidia-cuda-nvrtc): {exc}")
