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

#include <atomic>
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
  int64_t id;
  Entry entry;
  std::string name;
  std::vector<int64_t> ndims, itemsizes;
};

// Set while this thread runs a Numba entry; `raised` receives what it raised. Only the
// trivial flag is touched on the success path (a std::string thread_local costs an
// initialisation check on every access).
thread_local bool in_entry = false;
thread_local std::string raised;

std::mutex table_mutex;
std::unordered_map<int64_t, Kernel>& table() {
  static auto* t = new std::unordered_map<int64_t, Kernel>();  // never destroyed: XLA may outlive us
  return *t;
}

// What calls read, without a lock: an open-addressing index over the table, replaced
// whole by each registration (rare). Old indexes are leaked on purpose: a call on another
// thread may still be reading one. Entries are never erased, so Kernel pointers stay valid.
struct Index {
  uint64_t mask;
  std::vector<const Kernel*> slots;
};
std::atomic<const Index*> index{nullptr};

void publish_index() {  // with table_mutex held
  uint64_t size = 8;
  while (size < 2 * table().size()) size *= 2;
  auto* next = new Index{size - 1, std::vector<const Kernel*>(size, nullptr)};
  for (const auto& item : table()) {
    uint64_t i = static_cast<uint64_t>(item.first) & next->mask;
    while (next->slots[i] != nullptr) i = (i + 1) & next->mask;
    next->slots[i] = &item.second;
  }
  index.store(next, std::memory_order_release);
}

inline const Kernel* find_kernel(int64_t id) {
  const Index* ix = index.load(std::memory_order_acquire);
  if (ix == nullptr) return nullptr;
  for (uint64_t i = static_cast<uint64_t>(id) & ix->mask;; i = (i + 1) & ix->mask) {
    const Kernel* k = ix->slots[i];
    if (k == nullptr || k->id == id) return k;
  }
}

constexpr int kMaxOperands = 256;
constexpr int kMaxDims = 2048;

[[maybe_unused]] void call_kernel(int64_t id, const BE::Tensor* const* operands, int64_t count) {
  const Kernel* k = find_kernel(id);
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
  const int32_t returned = k->entry(data, shapes);
  in_entry = false;
  if (returned != 1) {
    std::string what = std::move(raised);
    raised.clear();
    BE_FAIL() << "the Numba function " << k->name << " raised "
              << (what.empty() ? std::string("an exception (reported on stderr)") : what);
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
  k.id = id;
  k.entry = reinterpret_cast<Entry>(address);
  k.name = name;
  k.ndims.assign(ndims, ndims + count);
  k.itemsizes.assign(itemsizes, itemsizes + count);
  table().emplace(id, std::move(k));
  publish_index();
  return 0;
}

// Called (with the GIL, on the thread of the failing entry) by the sys.unraisablehook that
// Numba's cfunc wrapper reports through. 1 if this thread is inside one of our entries.
BE_NUMBA_CPU_EXPORT int be_numba_cpu_raised(const char* text) {
  if (!be_numba_cpu::in_entry) return 0;
  be_numba_cpu::raised = text;
  return 1;
}
