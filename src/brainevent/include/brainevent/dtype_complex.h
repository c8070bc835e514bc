// brainevent/dtype_complex.h - DType traits of std::complex element types.
#pragma once

#include <complex>

#include "brainevent/dtype.h"

namespace BE {
using complex64 = std::complex<float>;
using complex128 = std::complex<double>;

template <> struct DTypeOf<std::complex<float>> { static constexpr DType value = DType::Complex64; };
template <> struct DTypeOf<std::complex<double>> { static constexpr DType value = DType::Complex128; };
}  // namespace BE
