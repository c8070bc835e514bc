// brainevent/numba_callable_launcher.h - the CUDA handler behind numba_cuda_callable.
// Internal: the one header of a launcher library, compiled by the host compiler alone (no
// nvcc, no CUDA headers: the call's device comes from its stream through the driver API,
// dlopen'ed by cuda_kernel_table.h).
//
// be_numba_callable_handler is the XLA FFI handler calls go to, registered on the CUDA
// platform. It hands XLA's buffers and stream to one Python trampoline (a ctypes callback),
// which runs the user's callable; the callback's status and message come back through a
// buffer, so a Python exception becomes an XLA error instead of being lost. Python launches
// the kernels, so the handler is not command-buffer compatible (never captured in a CUDA
// graph). brainevent appends one generic entry per operand count, be_numba_callable::call,
// which the loader needs and only refuses: that library is built for the CPU.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <string>

#include "brainevent/check.h"  // what it uses, whatever common.h left out
#include "brainevent/common.h"
#include "brainevent/cuda_kernel_table.h"
#include "brainevent/xla_ffi.h"

namespace be_numba_callable {
namespace {  // internal linkage: each launcher library keeps its own state

// (callable id, data pointers, all shapes concatenated, device, stream, error buffer, its size)
// -> status
using Trampoline = int (*)(int64_t, void* const*, const int64_t*, int64_t, int64_t, char*, int64_t);

std::atomic<Trampoline> trampoline{nullptr};

constexpr int64_t kMaxOperands = 256;
constexpr int64_t kMaxDims = 2048;

// The generic entry of the CPU-built library (never registered with XLA).
[[maybe_unused]] void call(int64_t, const BE::Tensor* const*, int64_t) {
  BE_FAIL() << "numba_cuda_callable runs through be_numba_callable_handler on the CUDA platform, not on the CPU";
}

// The ordinal of the device whose context owns `stream` (the driver numbers devices as Numba does).
int64_t device_of(void* stream) {
  using namespace be_cuda_launch;
  const Driver& d = driver();
  BE_CHECK(d.error.empty()) << d.error;
  Context context = nullptr;
  Result status = d.StreamGetCtx(static_cast<Stream>(stream), &context);
  BE_CHECK(status == kSuccess && context != nullptr) << "cuStreamGetCtx failed: " << describe(status);
  ScopedContext scoped(context);
  Device device = 0;
  status = d.CtxGetDevice(&device);
  BE_CHECK(status == kSuccess) << "cuCtxGetDevice failed: " << describe(status);
  return device;
}

// Runs callable `id` with XLA's buffers (inputs, then results) on `stream`; "" or the error.
std::string run(int64_t id, const XLA_FFI_Buffer* const* buffers, int64_t count, void* stream) {
  Trampoline python = trampoline.load();
  BE_CHECK(python != nullptr) << "numba_cuda_callable is not initialised in this process; call the "
                                 "wrapper from brainevent.numba_cuda_callable again";
  void* data[kMaxOperands];
  int64_t shapes[kMaxDims];
  int64_t used = 0;
  for (int64_t i = 0; i < count; ++i) {
    BE_CHECK(used + buffers[i]->rank <= kMaxDims) << "too many dimensions";
    data[i] = buffers[i]->data;
    for (int64_t j = 0; j < buffers[i]->rank; ++j) shapes[used++] = buffers[i]->dims[j];
  }
  char error[8192];
  error[0] = '\0';
  const int64_t device = device_of(stream);
  if (python(id, data, shapes, device, reinterpret_cast<int64_t>(stream), error, sizeof(error)) == 0) return "";
  error[sizeof(error) - 1] = '\0';
  return error[0] != '\0' ? error : "numba_cuda_callable failed";
}

XLA_FFI_Error* handle(XLA_FFI_CallFrame* frame) {
  if (auto* query = BE::ffi::metadata_query(frame)) return BE::ffi::answer_metadata(frame, query, 0);
  if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) return nullptr;  // nothing to prepare
  const int64_t id = BE::ffi::int64_attr(frame, "kernel_id");
  const int64_t n_args = frame->args.size, count = n_args + frame->rets.size;
  std::string error;
  if (id < 0) error = "expected an int64 attribute kernel_id";
  if (count > kMaxOperands) error = "too many arrays";
  const XLA_FFI_Buffer* buffers[kMaxOperands];
  for (int64_t i = 0; error.empty() && i < count; ++i) {
    buffers[i] = static_cast<const XLA_FFI_Buffer*>(i < n_args ? frame->args.args[i] : frame->rets.rets[i - n_args]);
  }
  void* stream = nullptr;
  if (XLA_FFI_Error* failed = BE::ffi::stream_of(frame, &stream)) return failed;
  try {
    if (error.empty()) error = run(id, buffers, count, stream);
  } catch (const std::exception& e) {  // nothing may escape to XLA: it would end the process
    error = e.what();
  }
  return error.empty() ? nullptr : BE::ffi::make_error(frame, XLA_FFI_Error_Code_INTERNAL, error.c_str());
}

}  // namespace
}  // namespace be_numba_callable

BE_LAUNCHER_EXPORT void be_numba_callable_set_trampoline(int64_t address) {
  be_numba_callable::trampoline.store(reinterpret_cast<be_numba_callable::Trampoline>(address));
}

// The handler brainevent registers on the CUDA platform (see the comment at the top).
BE_LAUNCHER_EXPORT XLA_FFI_Error* be_numba_callable_handler(XLA_FFI_CallFrame* frame) {
  return be_numba_callable::handle(frame);
}
