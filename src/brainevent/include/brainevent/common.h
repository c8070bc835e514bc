// brainevent/common.h - the one header kernels include.
//
// BE::Tensor, BE::DType, BE_CHECK, the dtype dispatch macros and, when the
// CUDA runtime is visible (nvcc, or <cuda_runtime.h> included first), the
// CUDA error checks BE_CUDA_CHECK and BE_CHECK_KERNEL_LAUNCH.
#pragma once

#include <cstdint>

#include "brainevent/check.h"
#include "brainevent/dispatch.h"
#include "brainevent/dtype.h"
#include "brainevent/dtype_complex.h"
#include "brainevent/tensor.h"

#if defined(__CUDACC__) || defined(__CUDA_RUNTIME_H__)
#include "brainevent/cuda_check.h"
#endif
