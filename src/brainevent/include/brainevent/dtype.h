// brainevent/dtype.h - element types of BE::Tensor.
//
// The numeric values equal XLA's FFI data-type codes so that the generated
// binding converts without a table; nothing here depends on XLA headers.
#pragma once

#include <cstddef>
#include <cstdint>

// Whether common.h and dispatch.h bring in <complex> for BE::complex64 / complex128 and the
// _FN dispatch macros with complex cases (see dtype_complex.h). brainevent's build sets it
// to 0 for a unit that never names a complex type; compiled elsewhere, the default is 1.
#ifndef BE_STD_COMPLEX
#define BE_STD_COMPLEX 1
#endif

// Whether common.h brings in the checking half: BE_CHECK and BE::Error (check.h, with
// <string> and <stdexcept>), the dispatch macros, BE::Scratch and the CUDA checks.
// brainevent's build sets it to 0 for a unit that uses none of them (nor anything of
// namespace std); the shared decoder it links then holds the tensor checks' error path.
// Compiled elsewhere, the default is 1; do not set it to 0 outside brainevent's build.
#ifndef BE_CHECK_HEADERS
#define BE_CHECK_HEADERS 1
#endif

namespace BE {

enum class DType : int32_t {
  Invalid = 0,
  Bool = 1,
  Int8 = 2,
  Int16 = 3,
  Int32 = 4,
  Int64 = 5,
  UInt8 = 6,
  UInt16 = 7,
  UInt32 = 8,
  UInt64 = 9,
  Float16 = 10,
  Float32 = 11,
  Float64 = 12,
  Complex64 = 15,
  BFloat16 = 16,
  Complex128 = 18,
};

// Size in bytes of one element; 0 for types a BE::Tensor cannot hold.
inline constexpr std::size_t element_size(DType t) noexcept {
  switch (t) {
    case DType::Bool: case DType::Int8: case DType::UInt8: return 1;
    case DType::Int16: case DType::UInt16: case DType::Float16: case DType::BFloat16: return 2;
    case DType::Int32: case DType::UInt32: case DType::Float32: return 4;
    case DType::Int64: case DType::UInt64: case DType::Float64: case DType::Complex64: return 8;
    case DType::Complex128: return 16;
    default: return 0;
  }
}

// The canonical name, as used in arg_specs ("float32", ...).
inline constexpr const char* dtype_name(DType t) noexcept {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::Int8: return "int8";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::UInt8: return "uint8";
    case DType::UInt16: return "uint16";
    case DType::UInt32: return "uint32";
    case DType::UInt64: return "uint64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Complex64: return "complex64";
    case DType::Complex128: return "complex128";
    default: return "unsupported";
  }
}

// Storage types for 16-bit floats: the raw bits, for host code that only moves them
// (CUDA code uses __half / __nv_bfloat16, which have the same size and layout).
struct float16 {
  uint16_t bits;
};
struct bfloat16 {
  uint16_t bits;
};

// Complex numbers as plain pairs, usable in host and device code alike (std::complex
// is host-only); the layout of XLA's complex64 / complex128 elements.
struct complex64_t {
  float real;
  float imag;
};
struct complex128_t {
  double real;
  double imag;
};

// The element size under the name brainevent 0.2.1 used.
inline constexpr std::size_t dtype_size(DType t) noexcept { return element_size(t); }

// dtype_of<T>(): the DType of a C++ element type. CUDA's __half / __nv_bfloat16 are
// mapped in half.h and std::complex in dtype_complex.h (kept apart: their headers are
// slow to parse); data_ptr<T>() checks a type without a mapping by its size.
template <typename T> struct DTypeOf { static constexpr DType value = DType::Invalid; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::Bool; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::Int8; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::Int16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::Int32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::UInt8; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::UInt16; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::UInt32; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::UInt64; };
template <> struct DTypeOf<float> { static constexpr DType value = DType::Float32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::Float64; };
template <> struct DTypeOf<float16> { static constexpr DType value = DType::Float16; };
template <> struct DTypeOf<bfloat16> { static constexpr DType value = DType::BFloat16; };
template <> struct DTypeOf<complex64_t> { static constexpr DType value = DType::Complex64; };
template <> struct DTypeOf<complex128_t> { static constexpr DType value = DType::Complex128; };

// data_ptr<const float>() checks like data_ptr<float>().
template <typename T> struct DTypeOf<const T> : DTypeOf<T> {};

template <typename T> inline constexpr DType dtype_of() noexcept { return DTypeOf<T>::value; }

}  // namespace BE
