// brainevent/cuda_check.h - CUDA runtime error checks that throw BE::CudaError.
// Included by common.h only when the CUDA runtime is visible, so CPU-only
// sources compile with a plain host compiler.
#pragma once

#include <cuda_runtime.h>

#include "brainevent/check.h"

// BE_CUDA_CHECK(cudaMemsetAsync(...)) << "optional context";
#define BE_CUDA_CHECK(expr)                                                                   \
  for (cudaError_t be_cuda_status_ = (expr); BE_UNLIKELY(be_cuda_status_ != cudaSuccess);) \
  ::BE::detail::ErrorRaiser() &                                                             \
      ::BE::detail::ErrorBuilder(__FILE__, __LINE__, nullptr, ::BE::detail::ErrorKind::Cuda) \
          << #expr << " failed: " << cudaGetErrorName(be_cuda_status_) << " ("             \
          << cudaGetErrorString(be_cuda_status_) << ")"

// After a <<<...>>> launch: reports a bad launch configuration at its source line.
#define BE_CHECK_KERNEL_LAUNCH() BE_CUDA_CHECK(cudaGetLastError())

// Also waits for the device, so a fault inside the kernel (an illegal address, a trap)
// is reported here rather than by a later call. For debugging: it stalls the whole
// device, and it fails inside CUDA-graph capture (load with allow_cuda_graph=False).
#define BE_CHECK_KERNEL_LAUNCH_SYNC()          \
  do {                                         \
    BE_CUDA_CHECK(cudaGetLastError());         \
    BE_CUDA_CHECK(cudaDeviceSynchronize());    \
  } while (0)
