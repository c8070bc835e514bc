// brainevent/half.h - BE::float16_t and BE::bfloat16_t, the 16-bit float element types.
//
// Under a CUDA compiler they are CUDA's __half and __nv_bfloat16, with their arithmetic;
// in host-only code they are the raw-bits structs BE::float16 / BE::bfloat16, to move
// or reinterpret but not to compute with. (brainevent 0.2.1 defined them the same way.)
//
// <cuda_fp16.h> and <cuda_bf16.h> add about half a second to every nvcc compile, so
// brainevent's build passes -DBE_CUDA_HALF_TYPES=0 to a .cu file that never names a
// half type, a half intrinsic or a dispatch macro with half cases. Define
// BE_CUDA_HALF_TYPES yourself (0 or 1) to decide; compiled elsewhere, the default is 1.
#pragma once

#include "brainevent/dtype.h"

#if defined(__CUDACC__) || defined(__CUDA__)
#ifndef BE_CUDA_HALF_TYPES
#define BE_CUDA_HALF_TYPES 1
#endif
#if BE_CUDA_HALF_TYPES
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace BE {
using float16_t = __half;
using bfloat16_t = __nv_bfloat16;
template <> struct DTypeOf<__half> { static constexpr DType value = DType::Float16; };
template <> struct DTypeOf<__nv_bfloat16> { static constexpr DType value = DType::BFloat16; };
}  // namespace BE
#define BE_HAVE_HALF_TYPES_ 1
#else
#define BE_HAVE_HALF_TYPES_ 0
#endif
#else  // host-only code
namespace BE {
using float16_t = float16;
using bfloat16_t = bfloat16;
}  // namespace BE
#define BE_HAVE_HALF_TYPES_ 1
#endif
