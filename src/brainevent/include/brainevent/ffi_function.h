// brainevent/ffi_function.h - the per-function part of a generated XLA FFI binding.
//
// Internal. For each entry point, the generated kernel unit ends with one line,
//
//   BE_FFI_FUNCTION(scale, "mod.scale", "k.cpp:3", Cpu, BE_ARG BE_RET BE_ATTR("factor", Float32))
//
// which declares the entry's C trampoline, its parameter table and the four exported
// symbols the runtime looks up (names kept in step with brainevent/vocabulary.py):
//
//   be_ffi_<f>         the handler XLA is given; it forwards to a reloaded module's code
//   be_ffi_<f>__graph  the same with the command-buffer trait (CUDA-graph capturable)
//   be_impl_<f>        the handler that never forwards (what a forwarding slot points at)
//   be_fwd_<f>         the forwarding slot
//
// This header needs only XLA's C ABI (c_api.h, through xla_ffi.h) and BE::Tensor, so it adds little to the
// compile of the user's unit: the call-frame decoder (brainevent/ffi_binding.h) is declared
// here and compiled once per toolchain into an object that every module links.
#pragma once

#include <cstdint>

#include "brainevent/dtype.h"
#include "brainevent/tensor.h"
#include "brainevent/xla_ffi.h"  // and through it XLA's C ABI

#define BE_EXPORT extern "C" __attribute__((visibility("default")))
#define BE_ENTRY_DECL extern "C" __attribute__((visibility("hidden")))

namespace BE {
namespace ffi {

// The vocabulary of a parameter table (brainevent/vocabulary.py: ROLE_ENUM, PLATFORM_ENUM).
enum class Role : int { Arg = 0, Ret = 1, Stream = 2, Attr = 3, Scratch = 4 };
enum class Platform : int { Cpu = 0, Cuda = 1 };

// A declared result shape (arg_spec `ret:like(x)`, `ret:like(x):int32`, `ret:(n,4):float32`)
// is checked by the decoder before the entry point runs.
constexpr int kMaxFixedRank = 8;
// A fixed dim taken from an input (`x.shape[d]` of input k) is kInputDim - (k * 256 + d).
constexpr int64_t kInputDim = -(int64_t{1} << 40);

struct ParamDesc {
  Role role;
  const char* attr_name;  // attrs: the attribute's name; rets: the parameter's name
  DType attr_type;        // attrs: the value's type; declared rets: the result's (Invalid: the input's)
  const char* shape;      // declared rets: the declaration as written in the spec, else nullptr
  int like_arg;           // ret:like(x): x's ordinal among the inputs, else -1
  int rank;               // ret:(d0,...): the rank, else -1
  int64_t dims[kMaxFixedRank];  // a dim >= 0 is itself; -(k + 1) is attribute k's value; see kInputDim
};

// Calls the user's entry point; what it throws reaches the decoder (call_frame), which catches it.
using Trampoline = void (*)(const Tensor* tensors, void* const* attrs, int64_t stream);

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
  int num_scratch;  // scratch buffers: XLA passes them as results after the `ret` ones
};

// A parameter table ends with one padding row, so a function without parameters still has
// a legal array; the counts below leave it out.
constexpr ParamDesc kPaddingRow = {Role::Arg, nullptr, DType::Invalid, nullptr, -1, -1, {}};

template <int N>
constexpr int count_role(const ParamDesc (&params)[N], Role role) {
  int n = 0;
  for (int i = 0; i + 1 < N; ++i) n += params[i].role == role ? 1 : 0;
  return n;
}

template <int N>
constexpr FunctionDesc describe(const char* target, const char* location, const ParamDesc (&params)[N],
                                Platform platform, Trampoline entry) {
  return {target,
          location,
          params,
          N - 1,
          count_role(params, Role::Arg),
          count_role(params, Role::Ret),
          count_role(params, Role::Attr),
          platform,
          entry,
          count_role(params, Role::Scratch)};
}

// Room for an attribute value of any supported type (complex128 is the largest).
struct AttrSlot {
  alignas(16) unsigned char bytes[16];
};

// Where the decoder puts one call's tensors and attribute values: sized per function by
// the generated code, on the handler's stack, so a call never allocates.
struct Workspace {
  Tensor* tensors;
  int64_t* strides;  // 8 per tensor; higher ranks use a per-thread buffer
  AttrSlot* attr_slots;
  void** attr_pointers;
};

template <int kTensors, int kAttrs>
struct Scratch {
  Tensor tensors[kTensors];
  int64_t strides[kTensors * 8];
  AttrSlot attr_slots[kAttrs];
  void* attr_pointers[kAttrs];
  Workspace view() { return {tensors, strides, attr_slots, attr_pointers}; }
};

// The decoder (ffi_binding.h): answers metadata queries, checks the frame, decodes the
// operands and attributes into `ws` and calls fn.entry.
__attribute__((visibility("hidden"))) XLA_FFI_Error* call_frame(XLA_FFI_CallFrame* frame, const FunctionDesc& fn,
                                                                XLA_FFI_Handler_Traits traits, const Workspace& ws);

constexpr int at_least_one(int n) { return n > 0 ? n : 1; }  // arrays must not be empty

template <const FunctionDesc& kFn>
XLA_FFI_Error* call(XLA_FFI_CallFrame* frame, XLA_FFI_Handler_Traits traits) {
  Scratch<at_least_one(kFn.num_args + kFn.num_rets + kFn.num_scratch), at_least_one(kFn.num_attrs)> scratch;
  return call_frame(frame, kFn, traits, scratch.view());
}

// A reloaded module stores its own be_impl_<f> in the slot; metadata queries stay local.
template <const FunctionDesc& kFn>
XLA_FFI_Error* forward_or_call(XLA_FFI_Handler* const* slot, XLA_FFI_CallFrame* frame,
                               XLA_FFI_Handler_Traits traits) {
  XLA_FFI_Handler* next = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (next != nullptr && metadata_query(frame) == nullptr) return next(frame);
  return call<kFn>(frame, traits);
}

}  // namespace ffi
}  // namespace BE

// Rows of a parameter table, written back to back (each ends with its comma).
#define BE_ARG {::BE::ffi::Role::Arg, nullptr, ::BE::DType::Invalid, nullptr, -1, -1, {}},
#define BE_RET {::BE::ffi::Role::Ret, nullptr, ::BE::DType::Invalid, nullptr, -1, -1, {}},
#define BE_STREAM {::BE::ffi::Role::Stream, nullptr, ::BE::DType::Invalid, nullptr, -1, -1, {}},
#define BE_ATTR(NAME, DTYPE) {::BE::ffi::Role::Attr, NAME, ::BE::DType::DTYPE, nullptr, -1, -1, {}},
#define BE_SCRATCH {::BE::ffi::Role::Scratch, nullptr, ::BE::DType::Invalid, nullptr, -1, -1, {}},
// Declared results: NAME the parameter, SHAPE the declaration (for messages), ARG an input's
// ordinal, DTYPE a DType enumerator (Invalid: the input's own), then the fixed dims.
#define BE_RET_LIKE(NAME, SHAPE, ARG, DTYPE) {::BE::ffi::Role::Ret, NAME, ::BE::DType::DTYPE, SHAPE, ARG, -1, {}},
#define BE_RET_FIXED(NAME, SHAPE, DTYPE, RANK, ...) \
  {::BE::ffi::Role::Ret, NAME, ::BE::DType::DTYPE, SHAPE, -1, RANK, {__VA_ARGS__}},

#define BE_FFI_FUNCTION(F, TARGET, LOCATION, PLATFORM, ...)                                                   \
  BE_ENTRY_DECL void be_entry_##F(const ::BE::Tensor*, void* const*, int64_t);                              \
  static constexpr ::BE::ffi::ParamDesc be_params_##F[] = {__VA_ARGS__ ::BE::ffi::kPaddingRow};            \
  static constexpr ::BE::ffi::FunctionDesc be_desc_##F =                                                     \
      ::BE::ffi::describe(TARGET, LOCATION, be_params_##F, ::BE::ffi::Platform::PLATFORM, &be_entry_##F);    \
  extern "C" {                                                                                               \
  __attribute__((visibility("default"))) XLA_FFI_Handler* be_fwd_##F = nullptr;                              \
  }                                                                                                          \
  BE_EXPORT XLA_FFI_Error* be_impl_##F(XLA_FFI_CallFrame* frame) {                                           \
    return ::BE::ffi::call<be_desc_##F>(frame, 0);                                                           \
  }                                                                                                          \
  BE_EXPORT XLA_FFI_Error* be_ffi_##F(XLA_FFI_CallFrame* frame) {                                            \
    return ::BE::ffi::forward_or_call<be_desc_##F>(&be_fwd_##F, frame, 0);                                   \
  }                                                                                                          \
  BE_EXPORT XLA_FFI_Error* be_ffi_##F##__graph(XLA_FFI_CallFrame* frame) {                                   \
    return ::BE::ffi::forward_or_call<be_desc_##F>(&be_fwd_##F, frame,                                       \
                                                   XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE);        \
  }
