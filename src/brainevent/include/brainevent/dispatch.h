// brainevent/dispatch.h - run code for a tensor's runtime dtype.
//
// Two families, one per way of giving the code:
//
//   BE_DISPATCH_FLOATING(x.dtype(), scalar_t, {      // statements; the second
//     scale(x.data_ptr<scalar_t>(), x.numel());      // argument names the alias
//   });
//
//   double s = BE_DISPATCH_FLOATING_FN(x.dtype(), "my_op", [&] {  // a lambda whose
//     return sum(x.data_ptr<scalar_t>(), x.numel());              // value is returned;
//   });                                                            // the alias is scalar_t
//
// The statement form has brainevent 0.2.1's names, dtype sets and alias types. An
// unsupported dtype throws BE::Error naming the macro (or the operation), the dtype and
// the dtypes accepted; it never aborts.
#pragma once

#include <cstdint>
#include <string>

#include "brainevent/check.h"
#include "brainevent/dtype.h"
#if BE_STD_COMPLEX  // the _FN forms' complex cases are std::complex (see dtype.h)
#include <complex>
#endif
#include "brainevent/half.h"

namespace BE {
namespace detail {

[[noreturn]] inline void unsupported_dtype(const char* file, int line, const char* op, DType dtype,
                                           const char* accepted) {
  ErrorRaiser() & ErrorBuilder(file, line, nullptr)
                      << op << ": unsupported dtype " << dtype_name(dtype) << " (expected one of "
                      << accepted << ")";
}

}  // namespace detail
}  // namespace BE

// ---- shared machinery -------------------------------------------------------------------
// A case list takes the macro that writes one case, CASE(ENUM, TYPE, ALIAS, BODY...), so
// both families share one list of (dtype, C++ type) pairs per set.

#define BE_CASES_FLOATING_(CASE, ALIAS, ...) \
  CASE(Float32, float, ALIAS, __VA_ARGS__)   \
  CASE(Float64, double, ALIAS, __VA_ARGS__)

#define BE_CASES_INTEGRAL_(CASE, ALIAS, ...)  \
  CASE(Int8, int8_t, ALIAS, __VA_ARGS__)      \
  CASE(Int16, int16_t, ALIAS, __VA_ARGS__)    \
  CASE(Int32, int32_t, ALIAS, __VA_ARGS__)    \
  CASE(Int64, int64_t, ALIAS, __VA_ARGS__)    \
  CASE(UInt8, uint8_t, ALIAS, __VA_ARGS__)    \
  CASE(UInt16, uint16_t, ALIAS, __VA_ARGS__)  \
  CASE(UInt32, uint32_t, ALIAS, __VA_ARGS__)  \
  CASE(UInt64, uint64_t, ALIAS, __VA_ARGS__)

#define BE_CASES_BOOL_(CASE, ALIAS, ...) CASE(Bool, bool, ALIAS, __VA_ARGS__)

#define BE_CASES_SIGNED_INDEX_(CASE, ALIAS, ...) \
  CASE(Int32, int32_t, ALIAS, __VA_ARGS__)       \
  CASE(Int64, int64_t, ALIAS, __VA_ARGS__)

#define BE_CASES_HALF_(CASE, ALIAS, ...)                \
  CASE(Float16, ::BE::float16_t, ALIAS, __VA_ARGS__)    \
  CASE(BFloat16, ::BE::bfloat16_t, ALIAS, __VA_ARGS__)

#define BE_CASES_COMPLEX_POD_(CASE, ALIAS, ...)             \
  CASE(Complex64, ::BE::complex64_t, ALIAS, __VA_ARGS__)    \
  CASE(Complex128, ::BE::complex128_t, ALIAS, __VA_ARGS__)

#define BE_CASES_COMPLEX_STD_(CASE, ALIAS, ...)                \
  CASE(Complex64, std::complex<float>, ALIAS, __VA_ARGS__)     \
  CASE(Complex128, std::complex<double>, ALIAS, __VA_ARGS__)

// The dtype is evaluated once; the lambda makes the dispatch one expression.
#define BE_DISPATCH_SWITCH_(DTYPE, WHAT, ACCEPTED, CASES)                                        \
  [&] {                                                                                         \
    const ::BE::DType be_dispatch_dtype_ = (DTYPE);                                             \
    switch (be_dispatch_dtype_) {                                                               \
      CASES                                                                                     \
      default:                                                                                  \
        ::BE::detail::unsupported_dtype(__FILE__, __LINE__, WHAT, be_dispatch_dtype_, ACCEPTED); \
    }                                                                                           \
  }()

// ---- statement form: BE_DISPATCH_X(dtype, alias, { statements }) -------------------------

#define BE_STMT_CASE_(ENUM, TYPE, ALIAS, ...) \
  case ::BE::DType::ENUM: {                   \
    using ALIAS = TYPE;                       \
    __VA_ARGS__                               \
    break;                                    \
  }

#define BE_DISPATCH_FLOATING(DTYPE, SCALAR_VAR, ...)                      \
  BE_DISPATCH_SWITCH_(DTYPE, "BE_DISPATCH_FLOATING", "float32, float64", \
                      BE_CASES_FLOATING_(BE_STMT_CASE_, SCALAR_VAR, __VA_ARGS__))

// Half cases only where arithmetic on them compiles: under a CUDA compiler with the half
// types in (see half.h). In host-only code this is BE_DISPATCH_FLOATING, as in 0.2.1.
#if defined(__CUDACC__) || defined(__CUDA__)
#if BE_HAVE_HALF_TYPES_
#define BE_DISPATCH_FLOATING_AND_HALF(DTYPE, SCALAR_VAR, ...)                                       \
  BE_DISPATCH_SWITCH_(DTYPE, "BE_DISPATCH_FLOATING_AND_HALF", "float16, bfloat16, float32, float64", \
                      BE_CASES_HALF_(BE_STMT_CASE_, SCALAR_VAR, __VA_ARGS__)                        \
                          BE_CASES_FLOATING_(BE_STMT_CASE_, SCALAR_VAR, __VA_ARGS__))
#else
#define BE_DISPATCH_FLOATING_AND_HALF(DTYPE, SCALAR_VAR, ...) \
  static_assert(BE_HAVE_HALF_TYPES_, "BE_DISPATCH_FLOATING_AND_HALF needs the CUDA half types: compile with -DBE_CUDA_HALF_TYPES=1")
#endif
#else
#define BE_DISPATCH_FLOATING_AND_HALF(DTYPE, SCALAR_VAR, ...)                      \
  BE_DISPATCH_SWITCH_(DTYPE, "BE_DISPATCH_FLOATING_AND_HALF", "float32, float64", \
                      BE_CASES_FLOATING_(BE_STMT_CASE_, SCALAR_VAR, __VA_ARGS__))
#endif

#define BE_DISPATCH_INTEGRAL(DTYPE, SCALAR_VAR, ...)                                          \
  BE_DISPATCH_SWITCH_(DTYPE, "BE_DISPATCH_INTEGRAL",                                         \
                      "bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64",      \
                      BE_CASES_BOOL_(BE_STMT_CASE_, SCALAR_VAR, __VA_ARGS__)                 \
                          BE_CASES_INTEGRAL_(BE_STMT_CASE_, SCALAR_VAR, __VA_ARGS__))

// Signed index dtypes of sparse structure arrays.
#define BE_DISPATCH_SIGNED_INDEX(DTYPE, SCALAR_VAR, ...)                   \
  BE_DISPATCH_SWITCH_(DTYPE, "BE_DISPATCH_SIGNED_INDEX", "int32, int64", \
                      BE_CASES_SIGNED_INDEX_(BE_STMT_CASE_, SCALAR_VAR, __VA_ARGS__))

// Two index dtypes at once: INDEX_VAR and OFFSET_VAR are both in scope in the statements.
#define BE_DISPATCH_SIGNED_INDEX_PAIR(INDEX_DTYPE, OFFSET_DTYPE, INDEX_VAR, OFFSET_VAR, ...) \
  BE_DISPATCH_SIGNED_INDEX(INDEX_DTYPE, INDEX_VAR, {                                         \
    BE_DISPATCH_SIGNED_INDEX(OFFSET_DTYPE, OFFSET_VAR, {__VA_ARGS__});                       \
  })

// The row-pointer dtype of a CSR matrix (its column indices stay int32).
#define BE_DISPATCH_CSR_INDPTR(DTYPE, INDPTR_VAR, ...)                   \
  BE_DISPATCH_SWITCH_(DTYPE, "BE_DISPATCH_CSR_INDPTR", "int32, int64", \
                      BE_CASES_SIGNED_INDEX_(BE_STMT_CASE_, INDPTR_VAR, __VA_ARGS__))

#define BE_CHECK_CSR_INDICES_INT32(TENSOR)                    \
  BE_CHECK((TENSOR).dtype() == ::BE::DType::Int32)            \
      << "CSR kernels need int32 column indices, got " << (TENSOR).dtype()

// BE::complex64_t / complex128_t: {real, imag} pairs that device code can use too.
#define BE_DISPATCH_COMPLEX(DTYPE, SCALAR_VAR, ...)                              \
  BE_DISPATCH_SWITCH_(DTYPE, "BE_DISPATCH_COMPLEX", "complex64, complex128", \
                      BE_CASES_COMPLEX_POD_(BE_STMT_CASE_, SCALAR_VAR, __VA_ARGS__))

#define BE_DISPATCH_FLOATING_AND_COMPLEX(DTYPE, SCALAR_VAR, ...)                                  \
  BE_DISPATCH_SWITCH_(DTYPE, "BE_DISPATCH_FLOATING_AND_COMPLEX",                                 \
                      "float32, float64, complex64, complex128",                                 \
                      BE_CASES_FLOATING_(BE_STMT_CASE_, SCALAR_VAR, __VA_ARGS__)                 \
                          BE_CASES_COMPLEX_POD_(BE_STMT_CASE_, SCALAR_VAR, __VA_ARGS__))

// Floating and integral dtypes, bool included; no half, no complex.
#define BE_DISPATCH_ALL_TYPES(DTYPE, SCALAR_VAR, ...)                                            \
  BE_DISPATCH_SWITCH_(DTYPE, "BE_DISPATCH_ALL_TYPES",                                           \
                      "float32, float64, bool, int8, int16, int32, int64, uint8, uint16, "      \
                      "uint32, uint64",                                                         \
                      BE_CASES_FLOATING_(BE_STMT_CASE_, SCALAR_VAR, __VA_ARGS__)                \
                          BE_CASES_BOOL_(BE_STMT_CASE_, SCALAR_VAR, __VA_ARGS__)                \
                              BE_CASES_INTEGRAL_(BE_STMT_CASE_, SCALAR_VAR, __VA_ARGS__))

// Every dtype a tensor can have. In host-only code the half types are the raw-bits
// structs (see half.h), as in 0.2.1.
#if BE_HAVE_HALF_TYPES_
#define BE_DISPATCH_ALL(DTYPE, SCALAR_VAR, ...)                                                           \
  BE_DISPATCH_SWITCH_(DTYPE, "BE_DISPATCH_ALL",                                                          \
                      "float16, bfloat16, float32, float64, bool, int8, int16, int32, int64, uint8, "    \
                      "uint16, uint32, uint64, complex64, complex128",                                   \
                      BE_CASES_HALF_(BE_STMT_CASE_, SCALAR_VAR, __VA_ARGS__)                             \
                          BE_CASES_FLOATING_(BE_STMT_CASE_, SCALAR_VAR, __VA_ARGS__)                     \
                              BE_CASES_BOOL_(BE_STMT_CASE_, SCALAR_VAR, __VA_ARGS__)                     \
                                  BE_CASES_INTEGRAL_(BE_STMT_CASE_, SCALAR_VAR, __VA_ARGS__)             \
                                      BE_CASES_COMPLEX_POD_(BE_STMT_CASE_, SCALAR_VAR, __VA_ARGS__))
#else
#define BE_DISPATCH_ALL(DTYPE, SCALAR_VAR, ...) \
  static_assert(BE_HAVE_HALF_TYPES_, "BE_DISPATCH_ALL needs the CUDA half types: compile with -DBE_CUDA_HALF_TYPES=1")
#endif

// ---- lambda form: BE_DISPATCH_X_FN(dtype, "operation", [&] { ... }) ----------------------
// The alias is always scalar_t, the dispatch's value is the lambda's, complex types are
// std::complex, and the integral sets leave bool out.

#define BE_FN_CASE_(ENUM, TYPE, ALIAS, ...) \
  case ::BE::DType::ENUM: {                 \
    using scalar_t = TYPE;                  \
    return __VA_ARGS__();                   \
  }

#define BE_DISPATCH_FLOATING_FN(DTYPE, NAME, ...) \
  BE_DISPATCH_SWITCH_(DTYPE, NAME, "float32, float64", BE_CASES_FLOATING_(BE_FN_CASE_, be_unused_, __VA_ARGS__))

#define BE_DISPATCH_INTEGRAL_FN(DTYPE, NAME, ...)                                            \
  BE_DISPATCH_SWITCH_(DTYPE, NAME, "int8, int16, int32, int64, uint8, uint16, uint32, uint64", \
                      BE_CASES_INTEGRAL_(BE_FN_CASE_, be_unused_, __VA_ARGS__))

#define BE_DISPATCH_ALL_TYPES_FN(DTYPE, NAME, ...)                                                 \
  BE_DISPATCH_SWITCH_(DTYPE, NAME,                                                                \
                      "float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64", \
                      BE_CASES_FLOATING_(BE_FN_CASE_, be_unused_, __VA_ARGS__)                             \
                          BE_CASES_INTEGRAL_(BE_FN_CASE_, be_unused_, __VA_ARGS__))

#if BE_STD_COMPLEX
#define BE_DISPATCH_COMPLEX_FN(DTYPE, NAME, ...)             \
  BE_DISPATCH_SWITCH_(DTYPE, NAME, "complex64, complex128", \
                      BE_CASES_COMPLEX_STD_(BE_FN_CASE_, be_unused_, __VA_ARGS__))

#define BE_DISPATCH_FLOATING_AND_COMPLEX_FN(DTYPE, NAME, ...)                     \
  BE_DISPATCH_SWITCH_(DTYPE, NAME, "float32, float64, complex64, complex128",     \
                      BE_CASES_FLOATING_(BE_FN_CASE_, be_unused_, __VA_ARGS__)             \
                          BE_CASES_COMPLEX_STD_(BE_FN_CASE_, be_unused_, __VA_ARGS__))
#else
// Built with BE_STD_COMPLEX=0 (no <complex>): say so where the macro is used.
#define BE_STD_COMPLEX_MISSING_(NAME)                                                          \
  [&] {                                                                                        \
    static_assert(BE_STD_COMPLEX, NAME " needs <complex>: compile with -DBE_STD_COMPLEX=1 "     \
                                       "(or #define it before the first brainevent include)"); \
    return 0;                                                                                  \
  }()
#define BE_DISPATCH_COMPLEX_FN(DTYPE, NAME, ...) BE_STD_COMPLEX_MISSING_("BE_DISPATCH_COMPLEX_FN")
#define BE_DISPATCH_FLOATING_AND_COMPLEX_FN(DTYPE, NAME, ...) \
  BE_STD_COMPLEX_MISSING_("BE_DISPATCH_FLOATING_AND_COMPLEX_FN")
#endif
