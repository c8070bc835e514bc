// brainevent/common.h - the one header kernels include.
//
// BE::Tensor, BE::Scratch, BE::DType, the element types (BE::float16_t, BE::bfloat16_t,
// BE::complex64_t, ...), BE_CHECK, the dtype dispatch macros and, when the CUDA
// runtime is visible (nvcc, or <cuda_runtime.h> included first), the CUDA error
// checks BE_CUDA_CHECK, BE_CHECK_KERNEL_LAUNCH and BE_CHECK_KERNEL_LAUNCH_SYNC.
#pragma once

// Cheap C and C++ headers that kernels written for brainevent 0.2.1 got through its
// headers (assert, INT_MAX, PRId64, printf, abort, std::string, std::runtime_error).
#include <cassert>
#include <cinttypes>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "brainevent/dtype.h"  // the defaults of BE_CHECK_HEADERS and BE_STD_COMPLEX

#if BE_CHECK_HEADERS
#include <stdexcept>
#include <string>

#include "brainevent/check.h"
#include "brainevent/dispatch.h"
#include "brainevent/scratch.h"
#else
// The C and C++ headers <string> brought in that plain kernels may use unqualified
// (memcpy, strlen, isdigit, errno, placement new, braced lists).
#include <cctype>
#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <new>
#endif
#if BE_STD_COMPLEX
#include "brainevent/dtype_complex.h"
#endif
#include "brainevent/half.h"
#include "brainevent/tensor.h"

#if BE_CHECK_HEADERS && (defined(__CUDACC__) || defined(__CUDA_RUNTIME_H__))
#include "brainevent/cuda_check.h"
#endif
