// brainevent/xla_ffi.h - the XLA FFI C-ABI steps every handler of ours takes the same way:
// telling a metadata query from a call, answering it, returning an error to XLA, reading an
// int64 attribute and the stream, and which inputs a kernel takes.
//
// Internal. Shared by the generated bindings (ffi_function.h, ffi_binding.h) and the lean
// launcher handlers (cubin_launcher.h, numba_cpu_launcher.h, numba_callable_launcher.h), which read the call frame themselves.
#pragma once

#include <cstdint>
#include <cstring>

#include "xla/ffi/api/c_api.h"

namespace BE {
namespace ffi {

// XLA asks a handler for its API version and traits through a metadata extension; every
// other call is a real one (whatever other extensions a later XLA may add). Null: a call.
inline XLA_FFI_Metadata_Extension* metadata_query(const XLA_FFI_CallFrame* frame) {
  // auto: the extension base type's name differs across XLA releases.
  for (auto* ext = frame->extension_start; ext != nullptr; ext = ext->next) {
    if (ext->type == XLA_FFI_Extension_Metadata) return reinterpret_cast<XLA_FFI_Metadata_Extension*>(ext);
  }
  return nullptr;
}

// An error XLA reports for this call (it copies the message). Out of line: the success
// path carries none of it.
__attribute__((noinline, cold)) inline XLA_FFI_Error* make_error(const XLA_FFI_CallFrame* frame,
                                                                XLA_FFI_Error_Code code, const char* message) {
  XLA_FFI_Error_Create_Args args;
  std::memset(&args, 0, sizeof(args));
  args.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
  args.message = message;
  args.errc = code;
  return frame->api->XLA_FFI_Error_Create(&args);
}

// Answers a metadata query: the API version this handler speaks and its `traits`.
__attribute__((noinline, cold)) inline XLA_FFI_Error* answer_metadata(const XLA_FFI_CallFrame* frame,
                                                                     XLA_FFI_Metadata_Extension* ext,
                                                                     XLA_FFI_Handler_Traits traits) {
  if (ext->extension_base.struct_size < XLA_FFI_Metadata_Extension_STRUCT_SIZE || ext->metadata == nullptr ||
      ext->metadata->struct_size < XLA_FFI_Metadata_STRUCT_SIZE) {
    return make_error(frame, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                      "brainevent: XLA sent a metadata request older than this handler supports");
  }
  ext->metadata->api_version.struct_size = XLA_FFI_Api_Version_STRUCT_SIZE;
  ext->metadata->api_version.extension_start = nullptr;
  ext->metadata->api_version.major_version = XLA_FFI_API_MAJOR;
  ext->metadata->api_version.minor_version = XLA_FFI_API_MINOR;
  ext->metadata->traits = traits;
  return nullptr;
}

// The int64 scalar attribute `name` of the call (the launchers' kernel_id), or -1.
inline int64_t int64_attr(const XLA_FFI_CallFrame* frame, const char* name) {
  const size_t length = std::strlen(name);
  for (int64_t i = 0; i < frame->attrs.size; ++i) {
    const XLA_FFI_ByteSpan* key = frame->attrs.names[i];
    if (key->len != length || std::memcmp(key->ptr, name, length) != 0) continue;
    const auto* scalar = static_cast<const XLA_FFI_Scalar*>(frame->attrs.attrs[i]);
    if (frame->attrs.types[i] != XLA_FFI_AttrType_SCALAR || scalar->dtype != XLA_FFI_DataType_S64) return -1;
    return *static_cast<const int64_t*>(scalar->value);
  }
  return -1;
}

// Whether the call's inputs past its first `n` are results' buffers passed in aliased to clear
// them first (a result declared zeroed, calls/declared.py), which the kernel does not read: at
// most one per result, each sharing a result's buffer (an empty one has no address).
inline bool extra_inputs_alias_results(const XLA_FFI_CallFrame* frame, int64_t n) {
  if (n < 0 || frame->args.size < n || frame->args.size > n + frame->rets.size) return false;
  for (int64_t i = n; i < frame->args.size; ++i) {
    const auto* in = static_cast<const XLA_FFI_Buffer*>(frame->args.args[i]);
    bool found = false;
    for (int64_t d = 0; d < in->rank && !found; ++d) found = in->dims[d] == 0;
    for (int64_t r = 0; r < frame->rets.size && !found; ++r) {
      found = static_cast<const XLA_FFI_Buffer*>(frame->rets.rets[r])->data == in->data;
    }
    if (!found) return false;
  }
  return true;
}

// How many of the call's inputs a kernel of `operands` arrays (its inputs, then the results)
// takes, the rest being cleared results' buffers as above; -1 when they are not.
inline int64_t kernel_inputs(const XLA_FFI_CallFrame* frame, int64_t operands) {
  const int64_t n = operands - frame->rets.size;
  return extra_inputs_alias_results(frame, n) ? n : -1;
}

// The call's stream (a cudaStream_t on the CUDA platform) into `*stream`; null or XLA's error.
inline XLA_FFI_Error* stream_of(XLA_FFI_CallFrame* frame, void** stream) {
  XLA_FFI_Stream_Get_Args args;
  std::memset(&args, 0, sizeof(args));
  args.struct_size = XLA_FFI_Stream_Get_Args_STRUCT_SIZE;
  args.ctx = frame->ctx;
  XLA_FFI_Error* error = frame->api->XLA_FFI_Stream_Get(&args);
  *stream = args.stream;
  return error;
}

}  // namespace ffi
}  // namespace BE
