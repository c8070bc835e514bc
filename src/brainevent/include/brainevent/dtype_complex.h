// brainevent/dtype_complex.h - BE::complex64 / BE::complex128 (std::complex) and their
// DType traits.
//
// <complex> pulls in <sstream> and is most of what brainevent/common.h would cost to parse,
// so common.h includes this header only while BE_STD_COMPLEX is 1 (see dtype.h), and
// brainevent's build passes -DBE_STD_COMPLEX=0 to a unit in which no identifier, in the
// unit or in the project headers it includes, contains "complex" (std::complex,
// BE::complex64, BE_DISPATCH_COMPLEX_FN, ...). Include this header yourself wherever
// std::complex reaches a kernel some other way; it works whatever the macro says.
#pragma once

#include <complex>

#include "brainevent/dtype.h"

namespace BE {
using complex64 = std::complex<float>;
using complex128 = std::complex<double>;

template <> struct DTypeOf<std::complex<float>> { static constexpr DType value = DType::Complex64; };
template <> struct DTypeOf<std::complex<double>> { static constexpr DType value = DType::Complex128; };
}  // namespace BE
