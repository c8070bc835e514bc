// brainevent/numba_callable_launcher.h - the CUDA handler behind numba_cuda_callable.
// Internal: the one header of a launcher library; brainevent appends one small XLA FFI
// entry per operand count that calls be_numba_callable::call.
//
// The handler hands XLA's buffers and stream to one Python trampoline (a ctypes callback),
// which runs the user's callable. The callback's status and message come back through a
// buffer, so a Python exception becomes an XLA error instead of being lost.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "brainevent/check.h"  // what it uses, whatever common.h left out
#include "brainevent/common.h"
#include "brainevent/cuda_check.h"

#define BE_NUMBA_CALLABLE_EXPORT extern "C" __attribute__((visibility("default")))

namespace be_numba_callable {
namespace {  // internal linkage: each launcher library keeps its own state

// (callable id, data pointers, all shapes concatenated, device, stream, error buffer, its size)
// -> status
using Trampoline = int (*)(int64_t, void* const*, const int64_t*, int64_t, int64_t, char*, int64_t);

std::atomic<Trampoline> trampoline{nullptr};

constexpr int kMaxOperands = 256;
constexpr int kMaxDims = 2048;

[[maybe_unused]] void call(int64_t id, const BE::Tensor* const* operands, int64_t count, int64_t stream) {
  Trampoline run = trampoline.load();
  BE_CHECK(run != nullptr) << "numba_cuda_callable is not initialised in this process; call the "
                              "wrapper from brainevent.numba_cuda_callable again";
  BE_CHECK(count <= kMaxOperands) << "too many arrays: " << count;
  void* data[kMaxOperands];
  int64_t shapes[kMaxDims];
  int64_t used = 0;
  for (int64_t i = 0; i < count; ++i) {
    const BE::Tensor& t = *operands[i];
    BE_CHECK(used + t.ndim() <= kMaxDims) << "too many dimensions";
    data[i] = t.data_ptr();
    for (int64_t j = 0; j < t.ndim(); ++j) shapes[used++] = t.size(j);
  }
  int device = 0;  // the binding made the call's device current
  BE_CUDA_CHECK(cudaGetDevice(&device));
  char error[8192];
  error[0] = '\0';
  if (run(id, data, shapes, device, stream, error, static_cast<int64_t>(sizeof(error))) != 0) {
    error[sizeof(error) - 1] = '\0';
    BE_FAIL() << error;
  }
}

}  // namespace
}  // namespace be_numba_callable

BE_NUMBA_CALLABLE_EXPORT void be_numba_callable_set_trampoline(int64_t address) {
  be_numba_callable::trampoline.store(reinterpret_cast<be_numba_callable::Trampoline>(address));
}
