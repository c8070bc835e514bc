// brainevent/ffi_attrs.h - scalar attribute values: reading XLA's scalars and converting
// them, with range checks, to the type the entry point's parameter declares.
//
// Internal, part of the generated binding's decoder (brainevent/ffi_binding.h).
#pragma once

#include <cstdint>
#include <cstring>

#include "brainevent/dtype.h"
#include "brainevent/ffi_function.h"  // and through it xla/ffi/api/c_api.h, included once

namespace BE {
namespace ffi {

// A decoded scalar: the members that `kind` names are meaningful.
struct Scalar {
  enum Kind { Bool, Signed, Unsigned, Real, Complex, Unknown } kind = Unknown;
  int64_t i = 0;   // Bool (0/1) and Signed
  uint64_t u = 0;  // Unsigned
  double re = 0;   // Real, Complex
  double im = 0;   // Complex
};

template <typename T>
inline T load_as(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline double pow2(int e) {
  double r = 1.0;
  for (; e > 0; --e) r *= 2.0;
  for (; e < 0; ++e) r *= 0.5;
  return r;
}

inline double half_bits_to_double(uint16_t h) {
  const int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double value;
  if (exp == 0) value = mant * pow2(-24);
  else if (exp == 31) value = mant ? __builtin_nan("") : __builtin_inf();
  else value = (mant | 0x400) * pow2(exp - 25);
  return (h & 0x8000) ? -value : value;
}

inline double bf16_bits_to_double(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

inline Scalar read_scalar(const XLA_FFI_Scalar& s) {
  Scalar out;
  const void* p = s.value;
  switch (s.dtype) {
    case XLA_FFI_DataType_PRED: out.kind = Scalar::Bool; out.i = load_as<uint8_t>(p) != 0; break;
    case XLA_FFI_DataType_S8: out.kind = Scalar::Signed; out.i = load_as<int8_t>(p); break;
    case XLA_FFI_DataType_S16: out.kind = Scalar::Signed; out.i = load_as<int16_t>(p); break;
    case XLA_FFI_DataType_S32: out.kind = Scalar::Signed; out.i = load_as<int32_t>(p); break;
    case XLA_FFI_DataType_S64: out.kind = Scalar::Signed; out.i = load_as<int64_t>(p); break;
    case XLA_FFI_DataType_U8: out.kind = Scalar::Unsigned; out.u = load_as<uint8_t>(p); break;
    case XLA_FFI_DataType_U16: out.kind = Scalar::Unsigned; out.u = load_as<uint16_t>(p); break;
    case XLA_FFI_DataType_U32: out.kind = Scalar::Unsigned; out.u = load_as<uint32_t>(p); break;
    case XLA_FFI_DataType_U64: out.kind = Scalar::Unsigned; out.u = load_as<uint64_t>(p); break;
    case XLA_FFI_DataType_F16: out.kind = Scalar::Real; out.re = half_bits_to_double(load_as<uint16_t>(p)); break;
    case XLA_FFI_DataType_BF16: out.kind = Scalar::Real; out.re = bf16_bits_to_double(load_as<uint16_t>(p)); break;
    case XLA_FFI_DataType_F32: out.kind = Scalar::Real; out.re = load_as<float>(p); break;
    case XLA_FFI_DataType_F64: out.kind = Scalar::Real; out.re = load_as<double>(p); break;
    case XLA_FFI_DataType_C64: {
      const float* c = static_cast<const float*>(p);
      out.kind = Scalar::Complex; out.re = c[0]; out.im = c[1];
      break;
    }
    case XLA_FFI_DataType_C128: {
      const double* c = static_cast<const double*>(p);
      out.kind = Scalar::Complex; out.re = c[0]; out.im = c[1];
      break;
    }
    default: out.kind = Scalar::Unknown; break;
  }
  return out;
}

// A complex value passed as a float array [re, im] (see decode_attrs).
inline bool read_complex_pair(const XLA_FFI_Array& a, Scalar* out) {
  if (a.size != 2) return false;
  if (a.dtype == XLA_FFI_DataType_F32) {
    const float* c = static_cast<const float*>(a.data);
    out->re = c[0];
    out->im = c[1];
  } else if (a.dtype == XLA_FFI_DataType_F64) {
    const double* c = static_cast<const double*>(a.data);
    out->re = c[0];
    out->im = c[1];
  } else {
    return false;
  }
  out->kind = Scalar::Complex;
  return true;
}


template <typename T>
inline const char* to_integer(const Scalar& s, T* out) {
  constexpr bool is_signed = T(-1) < T(0);
  constexpr uint64_t max_value = is_signed ? static_cast<uint64_t>((uint64_t(1) << (sizeof(T) * 8 - 1)) - 1)
                                           : (sizeof(T) == 8 ? ~uint64_t(0) : (uint64_t(1) << (sizeof(T) * 8)) - 1);
  constexpr int64_t min_value = is_signed ? -static_cast<int64_t>(max_value) - 1 : 0;
  if (s.kind == Scalar::Bool || s.kind == Scalar::Signed) {
    if (s.i < min_value || (s.i > 0 && static_cast<uint64_t>(s.i) > max_value)) return "the value is out of range";
    *out = static_cast<T>(s.i);
    return nullptr;
  }
  if (s.kind == Scalar::Unsigned) {
    if (s.u > max_value) return "the value is out of range";
    *out = static_cast<T>(s.u);
    return nullptr;
  }
  return "an integer attribute needs an integer value; pass an int";
}

inline bool real_value(const Scalar& s, double* out) {
  switch (s.kind) {
    case Scalar::Bool:
    case Scalar::Signed: *out = static_cast<double>(s.i); return true;
    case Scalar::Unsigned: *out = static_cast<double>(s.u); return true;
    case Scalar::Real: *out = s.re; return true;
    default: return false;
  }
}

inline uint16_t float_to_half_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (absx < 0x38800000u) {  // a half subnormal: round |f| * 2^24 to nearest even
    float scaled;
    std::memcpy(&scaled, &absx, sizeof scaled);
    scaled *= 16777216.0f;
    uint32_t q = static_cast<uint32_t>(scaled);
    const float rem = scaled - static_cast<float>(q);
    if (rem > 0.5f || (rem == 0.5f && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  const uint32_t mant = absx & 0x7fffffu, exp = (absx >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // round to nearest even
  return static_cast<uint16_t>(sign | h);
}

inline uint16_t float_to_bf16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

template <typename T>
inline void store(AttrSlot* slot, T v) {
  std::memcpy(slot->bytes, &v, sizeof v);
}

template <typename T>
inline const char* store_integer(const Scalar& s, AttrSlot* slot) {
  T v{};
  if (const char* why = to_integer(s, &v)) return why;
  store(slot, v);
  return nullptr;
}

// Converts `s` to `target` into `slot`; returns nullptr or the reason it cannot.
inline const char* convert_scalar(const Scalar& s, DType target, AttrSlot* slot) {
  double real = 0;
  switch (target) {
    case DType::Bool:
      if (s.kind == Scalar::Bool || (s.kind == Scalar::Signed && (s.i == 0 || s.i == 1)) ||
          (s.kind == Scalar::Unsigned && s.u <= 1)) {
        store(slot, static_cast<bool>(s.kind == Scalar::Unsigned ? s.u : s.i));
        return nullptr;
      }
      return "a bool attribute needs True or False";
    case DType::Int8: return store_integer<int8_t>(s, slot);
    case DType::Int16: return store_integer<int16_t>(s, slot);
    case DType::Int32: return store_integer<int32_t>(s, slot);
    case DType::Int64: return store_integer<int64_t>(s, slot);
    case DType::UInt8: return store_integer<uint8_t>(s, slot);
    case DType::UInt16: return store_integer<uint16_t>(s, slot);
    case DType::UInt32: return store_integer<uint32_t>(s, slot);
    case DType::UInt64: return store_integer<uint64_t>(s, slot);
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float32:
    case DType::Float64: {
      if (!real_value(s, &real)) return "a real attribute cannot take a complex value";
      const double limit = target == DType::Float16 ? 65504.0 : target == DType::Float64 ? 1.7976931348623157e308 : 3.4028234663852886e38;
      const double magnitude = real < 0 ? -real : real;
      if (__builtin_isfinite(real) && magnitude > limit) return "the value is out of range";
      if (target == DType::Float64) store(slot, real);
      else if (target == DType::Float32) store(slot, static_cast<float>(real));
      else if (target == DType::Float16) store(slot, float_to_half_bits(static_cast<float>(real)));
      else store(slot, float_to_bf16_bits(static_cast<float>(real)));
      return nullptr;
    }
    case DType::Complex64:
    case DType::Complex128: {
      double re = 0, im = 0;
      if (s.kind == Scalar::Complex) { re = s.re; im = s.im; }
      else if (!real_value(s, &re)) return "unsupported value";
      if (target == DType::Complex128) {
        const double c[2] = {re, im};
        std::memcpy(slot->bytes, c, sizeof c);
      } else {
        const float c[2] = {static_cast<float>(re), static_cast<float>(im)};
        std::memcpy(slot->bytes, c, sizeof c);
      }
      return nullptr;
    }
    default:
      return "unsupported attribute type";
  }
}

}  // namespace ffi
}  // namespace BE
