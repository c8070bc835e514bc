// brainevent/ffi_binding.h - decodes an XLA FFI call frame for generated bindings.
//
// Internal: included only by the binding translation unit that brainevent
// generates. It speaks XLA's stable C ABI (xla/ffi/api/c_api.h) directly
// instead of the header-only C++ layer (ffi.h), which keeps the binding cheap
// to compile and lets every kernel build skip ffi.h entirely.
//
// One FunctionDesc per entry point describes its parameters in C++ order; the
// decoder fills BE::Tensor views and converted attribute values and calls the
// entry point's C trampoline, which lives in the user's translation unit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "brainevent/dtype.h"
#include "brainevent/tensor.h"
#include "xla/ffi/api/c_api.h"

#define BE_EXPORT extern "C" __attribute__((visibility("default")))

// The CUDA runtime entry points the binding needs, declared here (C linkage, int-sized
// enums) so the binding compiles without CUDA headers; CUDA modules link cudart.
#ifdef BE_BINDING_CUDA
extern "C" int cudaGetDevice(int* device);
extern "C" int cudaSetDevice(int device);
#endif

namespace BE {
namespace ffi {

static_assert(static_cast<int>(DType::Float32) == XLA_FFI_DataType_F32, "DType must mirror XLA");
static_assert(static_cast<int>(DType::BFloat16) == XLA_FFI_DataType_BF16, "DType must mirror XLA");
static_assert(static_cast<int>(DType::Complex128) == XLA_FFI_DataType_C128, "DType must mirror XLA");

// The decoder sizes its scratch arrays per function (template arguments from the
// generated code) and never allocates; strides share one bounded buffer.
constexpr int kMaxTotalRank = 256;

enum class Role : int { Arg = 0, Ret = 1, Stream = 2, Attr = 3 };
enum class Platform : int { Cpu = 0, Cuda = 1 };

struct ParamDesc {
  Role role;
  const char* attr_name;  // attrs only
  DType attr_type;        // attrs only
};

// Returns nullptr on success, else the failure's message (valid until the next call on this thread).
using Trampoline = const char* (*)(const Tensor* tensors, void* const* attrs, int64_t stream);

struct FunctionDesc {
  const char* target;    // "<module>.<func>", for messages
  const char* location;  // "<file>:<line>" of the definition, for messages
  const ParamDesc* params;
  int num_params;
  int num_args;
  int num_rets;
  int num_attrs;
  Platform platform;
  Trampoline entry;
};

// A bounded message buffer (printf-style appends, silently truncated).
struct Message {
  char text[2048];
  std::size_t used = 0;
  Message() { text[0] = '\0'; }
  template <typename... A>
  Message& add(const char* format, A... args) {
    if (used + 1 < sizeof text) {
      const int n = std::snprintf(text + used, sizeof text - used, format, args...);
      if (n > 0) used = used + static_cast<std::size_t>(n) < sizeof text ? used + n : sizeof text - 1;
    }
    return *this;
  }
};

inline XLA_FFI_Error* make_error(const XLA_FFI_CallFrame* frame, XLA_FFI_Error_Code code, const char* message) {
  XLA_FFI_Error_Create_Args args;
  std::memset(&args, 0, sizeof(args));
  args.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
  args.message = message;
  args.errc = code;
  return frame->api->XLA_FFI_Error_Create(&args);
}

inline Message start_message(const FunctionDesc& fn) {
  Message m;
  m.add("%s: ", fn.target);
  return m;
}

inline XLA_FFI_Error* invalid(const XLA_FFI_CallFrame* frame, const Message& m) {
  return make_error(frame, XLA_FFI_Error_Code_INVALID_ARGUMENT, m.text);
}

// XLA asks a handler for its API version and traits through a metadata extension;
// every other call is a real one (whatever other extensions a later XLA may add).
// `auto`: the extension struct was renamed between XLA releases, its layout was not.
inline bool is_metadata_query(const XLA_FFI_CallFrame* frame) {
  for (auto* ext = frame->extension_start; ext != nullptr; ext = ext->next) {
    if (ext->type == XLA_FFI_Extension_Metadata) return true;
  }
  return false;
}

// Answers XLA's registration-time query for the API version and traits.
inline XLA_FFI_Error* fill_metadata(XLA_FFI_CallFrame* frame, XLA_FFI_Handler_Traits traits) {
  auto* base = frame->extension_start;
  while (base->type != XLA_FFI_Extension_Metadata) base = base->next;
  auto* ext = reinterpret_cast<XLA_FFI_Metadata_Extension*>(base);
  if (ext->extension_base.struct_size < XLA_FFI_Metadata_Extension_STRUCT_SIZE || ext->metadata == nullptr ||
      ext->metadata->struct_size < XLA_FFI_Metadata_STRUCT_SIZE) {
    return make_error(frame, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                      "brainevent: XLA sent a metadata request older than this binding supports");
  }
  ext->metadata->api_version.struct_size = XLA_FFI_Api_Version_STRUCT_SIZE;
  ext->metadata->api_version.extension_start = nullptr;
  ext->metadata->api_version.major_version = XLA_FFI_API_MAJOR;
  ext->metadata->api_version.minor_version = XLA_FFI_API_MINOR;
  ext->metadata->traits = traits;
  return nullptr;
}

// ---- scalar attribute conversion -------------------------------------------------------------

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

inline void describe(Message& m, const Scalar& s, XLA_FFI_DataType dtype) {
  const char* name = dtype_name(static_cast<DType>(dtype));
  switch (s.kind) {
    case Scalar::Bool: m.add("%s %s", name, s.i ? "True" : "False"); break;
    case Scalar::Signed: m.add("%s %lld", name, static_cast<long long>(s.i)); break;
    case Scalar::Unsigned: m.add("%s %llu", name, static_cast<unsigned long long>(s.u)); break;
    case Scalar::Real: m.add("%s %.17g", name, s.re); break;
    case Scalar::Complex: m.add("%s (%.17g%+.17gj)", name, s.re, s.im); break;
    default: m.add("a value of XLA dtype code %d", static_cast<int>(dtype)); break;
  }
}

// Integer conversion with an exact range check; reals never truncate silently.
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

// Room for an attribute value of any supported type (complex128 is the largest).
struct AttrSlot {
  alignas(16) unsigned char bytes[16];
};

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

// Kept out of line so the success path carries no message buffer on its stack.
__attribute__((noinline, cold)) inline XLA_FFI_Error* entry_failed(const XLA_FFI_CallFrame* frame,
                                                                   const FunctionDesc& fn, const char* failure) {
  Message m;
  m.add("%s (%s): %s", fn.target, fn.location, failure);
  return make_error(frame, XLA_FFI_Error_Code_INTERNAL, m.text);
}

inline bool name_equals(const XLA_FFI_ByteSpan* span, const char* name) {
  const std::size_t n = std::strlen(name);
  return span->len == n && std::memcmp(span->ptr, name, n) == 0;
}

// ---- the decoder -----------------------------------------------------------------------------

// Fills slots/pointers for every declared attribute; nullptr or an error.
inline XLA_FFI_Error* decode_attrs(XLA_FFI_CallFrame* frame, const FunctionDesc& fn, AttrSlot* slots,
                                   void** pointers) {
  int found = 0;
  for (int p = 0, k = 0; p < fn.num_params; ++p) {
    const ParamDesc& param = fn.params[p];
    if (param.role != Role::Attr) continue;
    const int slot = k++;
    int64_t where = -1;
    for (int64_t j = 0; j < frame->attrs.size; ++j) {
      if (name_equals(frame->attrs.names[j], param.attr_name)) { where = j; break; }
    }
    if (where < 0) {
      return invalid(frame, start_message(fn).add("missing attribute '%s' (%s); pass %s=<value> as a keyword",
                                                  param.attr_name, dtype_name(param.attr_type), param.attr_name));
    }
    ++found;
    const bool is_complex = param.attr_type == DType::Complex64 || param.attr_type == DType::Complex128;
    Scalar value;
    XLA_FFI_DataType raw_dtype = XLA_FFI_DataType_INVALID;
    if (is_complex && frame->attrs.types[where] == XLA_FFI_AttrType_ARRAY) {
      // MLIR (and so jax.ffi.ffi_call) has no complex scalar attribute: a complex value
      // travels as a float array [re, im].
      const auto* pair = static_cast<const XLA_FFI_Array*>(frame->attrs.attrs[where]);
      if (!read_complex_pair(*pair, &value)) {
        return invalid(frame, start_message(fn).add(
                                  "attribute '%s' (%s) takes a real scalar or a float32/float64 array "
                                  "[re, im] of 2 elements; got an array of %lld element(s) of XLA dtype code %d",
                                  param.attr_name, dtype_name(param.attr_type),
                                  static_cast<long long>(pair->size), static_cast<int>(pair->dtype)));
      }
      raw_dtype = pair->dtype == XLA_FFI_DataType_F32 ? XLA_FFI_DataType_C64 : XLA_FFI_DataType_C128;
    } else if (frame->attrs.types[where] != XLA_FFI_AttrType_SCALAR) {
      return invalid(frame, start_message(fn).add("attribute '%s' must be a scalar %s, not an array, string or dict",
                                                  param.attr_name, dtype_name(param.attr_type)));
    } else {
      const auto* raw = static_cast<const XLA_FFI_Scalar*>(frame->attrs.attrs[where]);
      value = read_scalar(*raw);
      raw_dtype = raw->dtype;
    }
    pointers[slot] = slots[slot].bytes;
    if (raw_dtype == XLA_FFI_DataType_U16 &&
        (param.attr_type == DType::Float16 || param.attr_type == DType::BFloat16)) {
      const auto* raw = static_cast<const XLA_FFI_Scalar*>(frame->attrs.attrs[where]);
      store(&slots[slot], load_as<uint16_t>(raw->value));  // a uint16 is the raw bits, as in 0.2.1
      continue;
    }
    if (const char* why = convert_scalar(value, param.attr_type, &slots[slot])) {
      Message m = start_message(fn);
      m.add("attribute '%s' expects %s, got ", param.attr_name, dtype_name(param.attr_type));
      describe(m, value, raw_dtype);
      m.add(": %s", why);
      return invalid(frame, m);
    }
  }
  if (found == frame->attrs.size) return nullptr;
  for (int64_t j = 0; j < frame->attrs.size; ++j) {
    bool known = false;
    for (int p = 0; p < fn.num_params; ++p) {
      if (fn.params[p].role == Role::Attr && name_equals(frame->attrs.names[j], fn.params[p].attr_name)) known = true;
    }
    if (known) continue;
    Message m = start_message(fn);
    m.add("unexpected attribute '%.*s'; this function takes ", static_cast<int>(frame->attrs.names[j]->len),
          frame->attrs.names[j]->ptr);
    if (fn.num_attrs == 0) m.add("%s", "no attributes");
    for (int p = 0, listed = 0; p < fn.num_params; ++p) {
      if (fn.params[p].role == Role::Attr) m.add("%s%s", listed++ ? ", " : "", fn.params[p].attr_name);
    }
    return invalid(frame, m);
  }
  return nullptr;
}

// kTensors / kAttrs are the function's counts (at least 1, to keep arrays legal).
template <int kTensors, int kAttrs>
inline XLA_FFI_Error* invoke(XLA_FFI_CallFrame* frame, const FunctionDesc& fn, XLA_FFI_Handler_Traits traits) {
  if (is_metadata_query(frame)) return fill_metadata(frame, traits);
  if (frame->struct_size < XLA_FFI_CallFrame_STRUCT_SIZE) {
    return invalid(frame, start_message(fn).add("%s", "XLA passed a call frame older than this binding supports"));
  }
  if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) return nullptr;  // nothing to prepare

  if (frame->args.size != fn.num_args || frame->rets.size != fn.num_rets) {
    return invalid(frame, start_message(fn).add(
                              "expected %d input array(s) and %d result(s), got %lld input(s) and %lld result(s); "
                              "pass one array per 'arg' and one ShapeDtypeStruct per 'ret'",
                              fn.num_args, fn.num_rets, static_cast<long long>(frame->args.size),
                              static_cast<long long>(frame->rets.size)));
  }

  AttrSlot slots[kAttrs];
  void* attr_pointers[kAttrs];
  if (XLA_FFI_Error* err = decode_attrs(frame, fn, slots, attr_pointers)) return err;

  // Tensors in C++ parameter order; strides are derived (buffers are dense row-major).
  // Each tensor has room for rank 8 on the stack; higher ranks use a per-thread buffer.
  Tensor tensors[kTensors];
  int64_t strides[kTensors * 8];
  static thread_local int64_t wide_strides[kMaxTotalRank];
  int64_t used_rank = 0, used_wide = 0;
  int64_t stream = 0;
#ifdef BE_BINDING_CUDA
  // XLA may call from a thread whose current device is another GPU: the user's <<<>>>
  // launches go to the current device, so make it the one this call runs on.
  if (fn.platform == Platform::Cuda) {
    XLA_FFI_DeviceOrdinal_Get_Args oargs;
    std::memset(&oargs, 0, sizeof(oargs));
    oargs.struct_size = XLA_FFI_DeviceOrdinal_Get_Args_STRUCT_SIZE;
    oargs.ctx = frame->ctx;
    if (XLA_FFI_Error* err = frame->api->XLA_FFI_DeviceOrdinal_Get(&oargs)) return err;
    int current = -1;
    if (cudaGetDevice(&current) != 0 || current != oargs.device_ordinal) {
      if (const int status = cudaSetDevice(oargs.device_ordinal)) {
        return invalid(frame, start_message(fn).add("cudaSetDevice(%d) failed with CUDA error %d",
                                                    oargs.device_ordinal, status));
      }
    }
  }
#endif
  int next_arg = 0, next_ret = 0, next_tensor = 0;
  for (int p = 0; p < fn.num_params; ++p) {
    const Role role = fn.params[p].role;
    if (role == Role::Stream) {
      if (fn.platform == Platform::Cuda) {
        XLA_FFI_Stream_Get_Args sargs;
        std::memset(&sargs, 0, sizeof(sargs));
        sargs.struct_size = XLA_FFI_Stream_Get_Args_STRUCT_SIZE;
        sargs.ctx = frame->ctx;
        if (XLA_FFI_Error* err = frame->api->XLA_FFI_Stream_Get(&sargs)) return err;
        stream = reinterpret_cast<int64_t>(sargs.stream);
      }
      continue;  // on CPU the stream parameter receives 0
    }
    if (role != Role::Arg && role != Role::Ret) continue;
    const bool is_arg = role == Role::Arg;
    const int index = is_arg ? next_arg++ : next_ret++;
    auto* buf = static_cast<XLA_FFI_Buffer*>(is_arg ? frame->args.args[index] : frame->rets.rets[index]);
    const DType dtype = static_cast<DType>(buf->dtype);
    if (element_size(dtype) == 0) {
      return invalid(frame, start_message(fn).add(
                                "%s %d has a dtype BE::Tensor does not support (XLA dtype code %d); supported: "
                                "bool, int8-64, uint8-64, float16, bfloat16, float32, float64, complex64, complex128",
                                is_arg ? "input" : "result", index, static_cast<int>(buf->dtype)));
    }
    int64_t* own;
    if (buf->rank <= 8) {
      own = strides + used_rank;
      used_rank += 8;
    } else {
      if (used_wide + buf->rank > kMaxTotalRank) {
        return invalid(frame, start_message(fn).add("the operands' ranks add up to more than %d", kMaxTotalRank));
      }
      own = wide_strides + used_wide;
      used_wide += buf->rank;
    }
    int64_t step = 1;
    for (int64_t d = buf->rank - 1; d >= 0; --d) {
      own[d] = step;
      step *= buf->dims[d];
    }
    tensors[next_tensor++] = Tensor(buf->data, dtype, buf->rank, buf->dims, own);
  }

  if (const char* failure = fn.entry(tensors, attr_pointers, stream)) return entry_failed(frame, fn, failure);
  return nullptr;
}

}  // namespace ffi
}  // namespace BE
