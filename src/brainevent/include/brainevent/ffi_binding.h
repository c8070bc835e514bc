// brainevent/ffi_binding.h - decodes an XLA FFI call frame for generated bindings.
//
// Internal: included only by the decoder translation unit that brainevent
// generates (codegen.render_decoder), compiled once per toolchain and platform.
// It speaks XLA's stable C ABI (xla/ffi/api/c_api.h) directly instead of the
// header-only C++ layer (ffi.h), so no build ever compiles ffi.h.
//
// One FunctionDesc per entry point (BE_FFI_FUNCTION, ffi_function.h) describes its
// parameters in C++ order; call_frame fills BE::Tensor views and converted attribute
// values (ffi_attrs.h), calls the entry point's C trampoline, which lives in the
// user's translation unit, and turns what it throws into an error. call_frame is defined
// here, not inline: the shared decoder object is the one translation unit that includes
// this header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>

#include "brainevent/check.h"
#include "brainevent/dtype.h"
#include "brainevent/ffi_attrs.h"
#include "brainevent/ffi_function.h"  // and through it xla/ffi/api/c_api.h, included once
#include "brainevent/tensor.h"

#if !BE_CHECK_HEADERS
#error "the shared decoder holds the checks' error path: compile it with BE_CHECK_HEADERS=1"
#endif

// The error paths of BE::Tensor's checks, instantiated here once for every module: a unit
// built with BE_CHECK_HEADERS=0 (no check.h, no <string>) declares them without a body and
// calls these.
template void BE::detail::raise_tensor_error<void>(const char*, int64_t, int64_t, BE::DType);
template void BE::detail::raise_bounds_error<void>(int64_t, int64_t, const char*, int);

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

// Strides of tensors above rank 8 share one bounded per-thread buffer.
constexpr int kMaxTotalRank = 256;

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

// A zeroed argument struct of XLA's C API with its struct_size set.
template <typename Args>
inline Args c_args(std::size_t struct_size) {
  Args args;
  std::memset(&args, 0, sizeof(args));
  args.struct_size = struct_size;
  return args;
}

inline Message start_message(const FunctionDesc& fn) {
  Message m;
  m.add("%s: ", fn.target);
  return m;
}

inline XLA_FFI_Error* invalid(const XLA_FFI_CallFrame* frame, const Message& m) {
  return make_error(frame, XLA_FFI_Error_Code_INVALID_ARGUMENT, m.text);
}

// ---- messages about attribute values -------------------------------------------------------

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

// An exception the entry point let through, as an INTERNAL error naming the function. Kept
// out of line so the success path carries no message buffer on its stack.
__attribute__((noinline, cold)) inline XLA_FFI_Error* entry_failed(const XLA_FFI_CallFrame* frame,
                                                                   const FunctionDesc& fn, const char* prefix,
                                                                   const char* text) {
  Message m;
  m.add("%s (%s): %s%s", fn.target, fn.location, prefix, text);
  return make_error(frame, XLA_FFI_Error_Code_INTERNAL, m.text);
}

inline bool name_equals(const XLA_FFI_ByteSpan* span, const char* name) {
  const std::size_t n = std::strlen(name);
  return span->len == n && std::memcmp(span->ptr, name, n) == 0;
}

// ---- declared result shapes ------------------------------------------------------------------

// The value of attribute slot k (an integer attribute: the spec checker made sure) as int64.
inline int64_t attr_as_int64(const FunctionDesc& fn, const Workspace& ws, int k) {
  for (int p = 0, slot = 0; p < fn.num_params; ++p) {
    if (fn.params[p].role != Role::Attr) continue;
    if (slot++ != k) continue;
    const unsigned char* b = ws.attr_slots[k].bytes;
    switch (fn.params[p].attr_type) {
      case DType::Int8: return load_as<int8_t>(b);
      case DType::Int16: return load_as<int16_t>(b);
      case DType::Int32: return load_as<int32_t>(b);
      case DType::Int64: return load_as<int64_t>(b);
      case DType::UInt8: return load_as<uint8_t>(b);
      case DType::UInt16: return load_as<uint16_t>(b);
      case DType::UInt32: return load_as<uint32_t>(b);
      case DType::UInt64: return static_cast<int64_t>(load_as<uint64_t>(b));
      default: return -1;
    }
  }
  return -1;
}

inline void add_shape(Message& m, int64_t rank, const int64_t* dims) {
  m.add("%s", "(");
  for (int64_t d = 0; d < rank; ++d) m.add(d ? ", %lld" : "%lld", static_cast<long long>(dims[d]));
  m.add("%s", rank == 1 ? ",)" : ")");
}

// nullptr when result `index` matches its declaration, else the INVALID_ARGUMENT error
// (before the entry point runs: a kernel sized by its inputs must not write past it).
inline XLA_FFI_Error* check_declared_shape(XLA_FFI_CallFrame* frame, const FunctionDesc& fn, const ParamDesc& param,
                                           int index, const XLA_FFI_Buffer& got, const Workspace& ws) {
  int64_t fixed[kMaxFixedRank];
  int64_t rank;
  const int64_t* dims;
  DType dtype = param.attr_type;
  if (param.like_arg >= 0) {
    const auto* like = static_cast<const XLA_FFI_Buffer*>(frame->args.args[param.like_arg]);
    rank = like->rank;
    dims = like->dims;
    if (dtype == DType::Invalid) dtype = static_cast<DType>(like->dtype);
  } else {
    rank = param.rank;
    for (int d = 0; d < param.rank; ++d) {
      const int64_t code = param.dims[d];
      if (code > kInputDim) {
        fixed[d] = code >= 0 ? code : attr_as_int64(fn, ws, static_cast<int>(-code - 1));
      } else {  // dim `axis` of input `k`; -1 (never a size) when the input has no such dim
        const int64_t k = (kInputDim - code) / 256, axis = (kInputDim - code) % 256;
        const auto* in = static_cast<const XLA_FFI_Buffer*>(frame->args.args[k]);
        fixed[d] = axis < in->rank ? in->dims[axis] : -1;
      }
    }
    dims = fixed;
  }
  bool same = got.rank == rank && static_cast<DType>(got.dtype) == dtype;
  for (int64_t d = 0; same && d < rank; ++d) same = got.dims[d] == dims[d];
  if (same) return nullptr;
  Message m = start_message(fn);
  m.add("result %d '%s' (declared ret:%s) must have shape ", index, param.attr_name, param.shape);
  add_shape(m, rank, dims);
  m.add(" and dtype %s, got shape ", dtype_name(dtype));
  add_shape(m, got.rank, got.dims);
  m.add(" and dtype %s; the kernel was not run. Fix: pass jax.ShapeDtypeStruct(", dtype_name(static_cast<DType>(got.dtype)));
  add_shape(m, rank, dims);
  const char* dot = std::strrchr(fn.target, '.');
  m.add(", jnp.%s) for this result, or call mod.%s(...) without outs= to have it built from the declaration",
        dtype_name(dtype), dot != nullptr ? dot + 1 : fn.target);
  return invalid(frame, m);
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

// On CUDA, XLA may call from a thread whose current device is another GPU: the user's
// <<<>>> launches go to the current device, so make it the one this call runs on.
// Also fetches the call's stream (0 on CPU).
inline XLA_FFI_Error* enter_platform(XLA_FFI_CallFrame* frame, const FunctionDesc& fn, bool wants_stream,
                                     int64_t* stream) {
  switch (fn.platform) {  // no default: -Wswitch names a Platform not handled here
    case Platform::Cpu:
      *stream = 0;
      return nullptr;
    case Platform::Cuda: {
#ifdef BE_BINDING_CUDA
      auto oargs = c_args<XLA_FFI_DeviceOrdinal_Get_Args>(XLA_FFI_DeviceOrdinal_Get_Args_STRUCT_SIZE);
      oargs.ctx = frame->ctx;
      if (XLA_FFI_Error* err = frame->api->XLA_FFI_DeviceOrdinal_Get(&oargs)) return err;
      int current = -1;
      if (cudaGetDevice(&current) != 0 || current != oargs.device_ordinal) {
        if (const int status = cudaSetDevice(oargs.device_ordinal)) {
          return invalid(frame, start_message(fn).add("cudaSetDevice(%d) failed with CUDA error %d",
                                                      oargs.device_ordinal, status));
        }
      }
#endif
      if (!wants_stream) return nullptr;
      auto sargs = c_args<XLA_FFI_Stream_Get_Args>(XLA_FFI_Stream_Get_Args_STRUCT_SIZE);
      sargs.ctx = frame->ctx;
      if (XLA_FFI_Error* err = frame->api->XLA_FFI_Stream_Get(&sargs)) return err;
      *stream = reinterpret_cast<int64_t>(sargs.stream);
      return nullptr;
    }
  }
  return invalid(frame, start_message(fn).add("unknown platform code %d: the binding and its decoder are out of step",
                                              static_cast<int>(fn.platform)));
}

// Dense row-major strides for `buf`, in the handler's scratch or, past rank 8, the per-thread buffer.
inline int64_t* strides_for(const XLA_FFI_Buffer& buf, const Workspace& ws, int64_t* used_rank, int64_t* used_wide) {
  static thread_local int64_t wide_strides[kMaxTotalRank];
  int64_t* own;
  if (buf.rank <= 8) {
    own = ws.strides + *used_rank;
    *used_rank += 8;
  } else {
    if (*used_wide + buf.rank > kMaxTotalRank) return nullptr;
    own = wide_strides + *used_wide;
    *used_wide += buf.rank;
  }
  int64_t step = 1;
  for (int64_t d = buf.rank - 1; d >= 0; --d) {
    own[d] = step;
    step *= buf.dims[d];
  }
  return own;
}

XLA_FFI_Error* call_frame(XLA_FFI_CallFrame* frame, const FunctionDesc& fn, XLA_FFI_Handler_Traits traits,
                          const Workspace& ws) {
  if (auto* query = metadata_query(frame)) return answer_metadata(frame, query, traits);
  if (frame->struct_size < XLA_FFI_CallFrame_STRUCT_SIZE) {
    return invalid(frame, start_message(fn).add("%s", "XLA passed a call frame older than this binding supports"));
  }
  if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) return nullptr;  // nothing to prepare

  if (!extra_inputs_alias_results(frame, fn.num_args) || frame->rets.size != fn.num_rets + fn.num_scratch) {
    Message m = start_message(fn);
    m.add("expected %d input array(s) and %d result(s), got %lld input(s) and %lld result(s); "
          "pass one array per 'arg' and one ShapeDtypeStruct per 'ret'",
          fn.num_args, fn.num_rets + fn.num_scratch, static_cast<long long>(frame->args.size),
          static_cast<long long>(frame->rets.size));
    if (fn.num_scratch > 0) {
      m.add(", then one uint8 ShapeDtypeStruct((nbytes,)) per 'scratch' after the %d 'ret' result(s)", fn.num_rets);
    }
    return invalid(frame, m);
  }
  if (XLA_FFI_Error* err = decode_attrs(frame, fn, ws.attr_slots, ws.attr_pointers)) return err;

  // Tensors in C++ parameter order; strides are derived (buffers are dense row-major).
  bool wants_stream = false;
  for (int p = 0; p < fn.num_params; ++p) wants_stream = wants_stream || fn.params[p].role == Role::Stream;
  int64_t stream = 0;
  if (XLA_FFI_Error* err = enter_platform(frame, fn, wants_stream, &stream)) return err;
  int64_t used_rank = 0, used_wide = 0;
  int next_arg = 0, next_ret = 0, next_scratch = 0, next_tensor = 0;
  for (int p = 0; p < fn.num_params; ++p) {
    const Role role = fn.params[p].role;
    int is_tensor = -1;
    switch (role) {  // no default: -Wswitch names a Role this loop does not handle
      case Role::Stream:  // fetched by enter_platform
      case Role::Attr:    // decoded by decode_attrs
        is_tensor = 0;
        break;
      case Role::Arg:
      case Role::Ret:
      case Role::Scratch:  // a result buffer after the `ret` ones, seen as bytes (scratch.h)
        is_tensor = 1;
        break;
    }
    if (is_tensor < 0) {
      return invalid(frame, start_message(fn).add(
                                "parameter %d has unknown role code %d: the binding and its decoder are out of step",
                                p + 1, static_cast<int>(role)));
    }
    if (is_tensor == 0) continue;
    const bool is_arg = role == Role::Arg;
    const int index = is_arg ? next_arg++ : role == Role::Ret ? next_ret++ : fn.num_rets + next_scratch++;
    auto* buf = static_cast<XLA_FFI_Buffer*>(is_arg ? frame->args.args[index] : frame->rets.rets[index]);
    const DType dtype = static_cast<DType>(buf->dtype);
    if (element_size(dtype) == 0) {
      return invalid(frame, start_message(fn).add(
                                "%s %d has a dtype BE::Tensor does not support (XLA dtype code %d); supported: "
                                "bool, int8-64, uint8-64, float16, bfloat16, float32, float64, complex64, complex128",
                                is_arg ? "input" : "result", index, static_cast<int>(buf->dtype)));
    }
    if (role == Role::Ret && fn.params[p].shape != nullptr) {
      if (XLA_FFI_Error* err = check_declared_shape(frame, fn, fn.params[p], index, *buf, ws)) return err;
    }
    const int64_t* own = strides_for(*buf, ws, &used_rank, &used_wide);
    if (own == nullptr) {
      return invalid(frame, start_message(fn).add("the operands' ranks add up to more than %d", kMaxTotalRank));
    }
    ws.tensors[next_tensor++] = Tensor(buf->data, dtype, buf->rank, buf->dims, own);
  }

  // The trampoline and the user's code it calls are in this library, built by the same host
  // compiler: what they throw unwinds to here, and never into XLA.
  try {
    fn.entry(ws.tensors, ws.attr_pointers, stream);
  } catch (const std::exception& e) {
    return entry_failed(frame, fn, ::BE::detail::exception_prefix(e), e.what());
  } catch (...) {
    return entry_failed(frame, fn, "uncaught C++ exception of unknown type", "");
  }
  return nullptr;
}

}  // namespace ffi
}  // namespace BE
