"""C++ source of the CUDA handler behind ``numba_cuda_callable``.

The handler hands XLA's buffers and stream to one Python trampoline (a ctypes callback),
which runs the user's callable. The callback's status and message come back through a
buffer, so a Python exception becomes an XLA error instead of being lost.
"""

from __future__ import annotations

from .entry_source import arity_entry

CORE = r"""
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "brainevent/common.h"

namespace be_numba_callable {

// (callable id, data pointers, all shapes concatenated, device, stream, error buffer, its size)
// -> status
using Trampoline = int (*)(int64_t, void* const*, const int64_t*, int64_t, int64_t, char*, int64_t);

std::atomic<Trampoline> trampoline{nullptr};

constexpr int kMaxOperands = 256;
constexpr int kMaxDims = 2048;

void call(int64_t id, const BE::Tensor* const* operands, int64_t count, int64_t stream) {
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

}  // namespace be_numba_callable

extern "C" __attribute__((visibility("default"))) void be_numba_callable_set_trampoline(int64_t address) {
  be_numba_callable::trampoline.store(reinterpret_cast<be_numba_callable::Trampoline>(address));
}
"""


def entry_source(n_inputs: int, n_outputs: int) -> str:
    """The XLA FFI entry for ``n_inputs`` inputs and ``n_outputs`` outputs."""
    return arity_entry("run", "be_numba_callable::call", n_inputs, n_outputs, stream=True)
