// brainevent/dispatch.h - run a generic lambda for a tensor's runtime dtype.
//
//   BE_DISPATCH_FLOATING(x.dtype(), "my_op", [&] {
//     scalar_t* p = x.data_ptr<scalar_t>();   // scalar_t is float or double
//   });
//
// An unsupported dtype throws BE::Error naming the operation, the dtype and
// the dtypes it accepts.
#pragma once

#include <complex>
#include <cstdint>
#include <string>

#include "brainevent/check.h"
#include "brainevent/dtype.h"

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

#define BE_DISPATCH_CASE_(ENUM, TYPE, ...) \
  case ::BE::DType::ENUM: {                \
    using scalar_t = TYPE;                 \
    return __VA_ARGS__();                  \
  }

#define BE_DISPATCH_FLOATING_CASES_(...)         \
  BE_DISPATCH_CASE_(Float32, float, __VA_ARGS__) \
  BE_DISPATCH_CASE_(Float64, double, __VA_ARGS__)

#define BE_DISPATCH_INTEGRAL_CASES_(...)            \
  BE_DISPATCH_CASE_(Int8, int8_t, __VA_ARGS__)      \
  BE_DISPATCH_CASE_(Int16, int16_t, __VA_ARGS__)    \
  BE_DISPATCH_CASE_(Int32, int32_t, __VA_ARGS__)    \
  BE_DISPATCH_CASE_(Int64, int64_t, __VA_ARGS__)    \
  BE_DISPATCH_CASE_(UInt8, uint8_t, __VA_ARGS__)    \
  BE_DISPATCH_CASE_(UInt16, uint16_t, __VA_ARGS__)  \
  BE_DISPATCH_CASE_(UInt32, uint32_t, __VA_ARGS__)  \
  BE_DISPATCH_CASE_(UInt64, uint64_t, __VA_ARGS__)

#define BE_DISPATCH_COMPLEX_CASES_(...)                         \
  BE_DISPATCH_CASE_(Complex64, std::complex<float>, __VA_ARGS__) \
  BE_DISPATCH_CASE_(Complex128, std::complex<double>, __VA_ARGS__)

// The immediately-invoked lambda makes the dispatch an expression whose value
// is whatever the user's lambda returns.
#define BE_DISPATCH_SWITCH_(DTYPE, NAME, ACCEPTED, CASES)                                     \
  [&] {                                                                                      \
    const ::BE::DType be_dispatch_dtype_ = (DTYPE);                                          \
    switch (be_dispatch_dtype_) {                                                            \
      CASES                                                                                  \
      default:                                                                               \
        ::BE::detail::unsupported_dtype(__FILE__, __LINE__, NAME, be_dispatch_dtype_, ACCEPTED); \
    }                                                                                        \
  }()

#define BE_DISPATCH_FLOATING(DTYPE, NAME, ...) \
  BE_DISPATCH_SWITCH_(DTYPE, NAME, "float32, float64", BE_DISPATCH_FLOATING_CASES_(__VA_ARGS__))

#define BE_DISPATCH_INTEGRAL(DTYPE, NAME, ...)                                                 \
  BE_DISPATCH_SWITCH_(DTYPE, NAME, "int8, int16, int32, int64, uint8, uint16, uint32, uint64", \
                      BE_DISPATCH_INTEGRAL_CASES_(__VA_ARGS__))

#define BE_DISPATCH_ALL_TYPES(DTYPE, NAME, ...)                                                     \
  BE_DISPATCH_SWITCH_(DTYPE, NAME,                                                                  \
                      "float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64", \
                      BE_DISPATCH_FLOATING_CASES_(__VA_ARGS__) BE_DISPATCH_INTEGRAL_CASES_(__VA_ARGS__))

#define BE_DISPATCH_COMPLEX(DTYPE, NAME, ...) \
  BE_DISPATCH_SWITCH_(DTYPE, NAME, "complex64, complex128", BE_DISPATCH_COMPLEX_CASES_(__VA_ARGS__))

#define BE_DISPATCH_FLOATING_AND_COMPLEX(DTYPE, NAME, ...)                            \
  BE_DISPATCH_SWITCH_(DTYPE, NAME, "float32, float64, complex64, complex128",         \
                      BE_DISPATCH_FLOATING_CASES_(__VA_ARGS__) BE_DISPATCH_COMPLEX_CASES_(__VA_ARGS__))
