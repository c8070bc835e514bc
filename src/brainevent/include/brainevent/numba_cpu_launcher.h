// brainevent/numba_cpu_launcher.h - the compiled handler that calls a Numba ``cfunc`` on
// XLA's CPU buffers. Internal: the one header of a launcher library; brainevent appends one
// small XLA FFI entry per operand count that calls be_numba_cpu::call_kernel.
//
// The cfunc takes (void** data, int64_t* shapes): every operand's data pointer, then all
// shapes concatenated, and returns 1, or 0 when the Numba function raised. It is found in a
// table by a content id (the kernel_id attribute). What the function raised reaches the
// handler through be_numba_cpu_raised (called by the hook in numba_bridge/cpu_errors.py)
// and becomes the call's error.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "brainevent/common.h"

#define BE_NUMBA_CPU_EXPORT extern "C" __attribute__((visibility("default")))

namespace be_numba_cpu {
namespace {  // internal linkage: each launcher library keeps its own state

using Entry = int32_t (*)(void* const*, const int64_t*);

struct Kernel {
  Entry entry;
  std::string name;
  std::vector<int64_t> ndims, itemsizes;
};

// Set while this thread runs a Numba entry; `raised` receives what it raised.
thread_local bool in_entry = false;
thread_local std::string raised;

std::mutex table_mutex;
std::unordered_map<int64_t, Kernel>& table() {
  static auto* t = new std::unordered_map<int64_t, Kernel>();  // never destroyed: XLA may outlive us
  return *t;
}

constexpr int kMaxOperands = 256;
constexpr int kMaxDims = 2048;

[[maybe_unused]] void call_kernel(int64_t id, const BE::Tensor* const* operands, int64_t count) {
  const Kernel* k = nullptr;
  {
    std::lock_guard<std::mutex> lock(table_mutex);
    auto it = table().find(id);
    if (it != table().end()) k = &it->second;  // entries are never erased, so the pointer stays valid
  }
  BE_CHECK(k != nullptr) << "Numba kernel id " << id
                         << " is not registered in this process; call the wrapper from "
                            "brainevent.numba_kernel again to register it";
  BE_CHECK(static_cast<int64_t>(k->ndims.size()) == count && count <= kMaxOperands)
      << "the Numba kernel was compiled for " << static_cast<int64_t>(k->ndims.size())
      << " arrays, the call passes " << count;
  void* data[kMaxOperands];
  int64_t shapes[kMaxDims];
  int64_t used = 0;
  for (int64_t i = 0; i < count; ++i) {
    const BE::Tensor& t = *operands[i];
    BE_CHECK(t.ndim() == k->ndims[i] && static_cast<int64_t>(t.element_size()) == k->itemsizes[i])
        << "array " << i << " has rank " << t.ndim() << ", the Numba kernel was compiled for rank "
        << k->ndims[i];
    BE_CHECK(used + t.ndim() <= kMaxDims) << "too many dimensions";
    data[i] = t.data_ptr();
    for (int64_t j = 0; j < t.ndim(); ++j) shapes[used++] = t.size(j);
  }
  in_entry = true;
  raised.clear();
  const int32_t returned = k->entry(data, shapes);
  in_entry = false;
  if (returned != 1) {
    BE_FAIL() << "the Numba function " << k->name << " raised "
              << (raised.empty() ? std::string("an exception (reported on stderr)") : raised);
  }
}

}  // namespace
}  // namespace be_numba_cpu

BE_NUMBA_CPU_EXPORT int be_numba_cpu_register(
    int64_t id, int64_t address, const char* name, const int64_t* ndims, const int64_t* itemsizes,
    int64_t count) {
  using namespace be_numba_cpu;
  std::lock_guard<std::mutex> lock(table_mutex);
  if (table().count(id) != 0) return 1;
  Kernel k;
  k.entry = reinterpret_cast<Entry>(address);
  k.name = name;
  k.ndims.assign(ndims, ndims + count);
  k.itemsizes.assign(itemsizes, itemsizes + count);
  table().emplace(id, std::move(k));
  return 0;
}

// Called (with the GIL, on the thread of the failing entry) by the sys.unraisablehook that
// Numba's cfunc wrapper reports through. 1 if this thread is inside one of our entries.
BE_NUMBA_CPU_EXPORT int be_numba_cpu_raised(const char* text) {
  if (!be_numba_cpu::in_entry) return 0;
  be_numba_cpu::raised = text;
  return 1;
}
