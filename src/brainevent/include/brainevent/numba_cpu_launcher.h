// brainevent/numba_cpu_launcher.h - the compiled handler that calls a Numba ``cfunc`` on
// XLA's CPU buffers. Internal: the one header of a launcher library; brainevent appends one
// small XLA FFI entry per operand count that calls be_numba_cpu::call_kernel, and registers
// be_numba_cpu_handler, the lean handler calls go through.
//
// The cfunc takes (void** data, int64_t* shapes): every operand's data pointer, then all
// shapes concatenated, and returns 1, or 0 when the Numba function raised. It is found in a
// table by a content id (the kernel_id attribute); an id that was never registered in this
// library is an error, so no other address is ever called. What the function raised reaches
// the handler through be_numba_cpu_raised (called by the hook in launchers/numba_cpu.py)
// and becomes the call's error.
//
// be_numba_cpu_handler reads XLA's call frame itself (xla/ffi/api/c_api.h): the attribute by
// position, the buffers' data and dims as they are. A Numba loop step is a few tens of
// nanoseconds, so the generic decoder's work (names, strides, BE::Tensor views) shows in it.
#pragma once

#include <atomic>
#include <cstring>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "brainevent/check.h"  // what it uses, whatever common.h left out
#include "brainevent/common.h"
#include "brainevent/xla_ffi.h"

#define BE_NUMBA_CPU_EXPORT extern "C" __attribute__((visibility("default")))

namespace be_numba_cpu {
namespace {  // internal linkage: each launcher library keeps its own state

using Entry = int32_t (*)(void* const*, const int64_t*);

struct Kernel {
  int64_t id;
  Entry entry;
  std::string name;
  std::vector<int64_t> ndims, itemsizes;
  int64_t total_dims;  // the sum of ndims: how many shapes a call passes
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

// Bounds of the generic entry (call_kernel); the handler below uses the heap past its small buffers.
constexpr int kMaxOperands = 256;
constexpr int kMaxDims = 2048;

// Runs the entry on packed operands; false when the Numba function raised (see raised_text).
inline bool run(const Kernel& k, void* const* data, const int64_t* shapes) {
  in_entry = true;
  const int32_t returned = k.entry(data, shapes);
  in_entry = false;
  return returned == 1;
}

// What the failed entry raised, as the hook reported it (taken: the next failure starts empty).
__attribute__((noinline, cold)) std::string raised_text() {
  std::string what = std::move(raised);
  raised.clear();
  return what.empty() ? std::string("an exception (reported on stderr)") : what;
}

std::string unregistered(int64_t id) {
  return "Numba kernel id " + std::to_string(id) +
         " is not registered in this process; call the wrapper from brainevent.numba_kernel again to register it";
}

std::string wrong_count(const Kernel& k, int64_t count) {
  return "the Numba kernel " + k.name + " was compiled for " + std::to_string(k.ndims.size()) +
         " arrays, the call passes " + std::to_string(count);
}

std::string wrong_operand(const Kernel& k, int64_t i, int64_t ndim, int64_t itemsize) {
  return "array " + std::to_string(i) + " has rank " + std::to_string(ndim) + " and " + std::to_string(itemsize) +
         "-byte elements; the Numba kernel " + k.name + " was compiled for rank " + std::to_string(k.ndims[i]) +
         " and " + std::to_string(k.itemsizes[i]) + "-byte elements";
}

[[maybe_unused]] void call_kernel(int64_t id, const BE::Tensor* const* operands, int64_t count) {
  const Kernel* k = find_kernel(id);
  BE_CHECK(k != nullptr) << unregistered(id);
  BE_CHECK(static_cast<int64_t>(k->ndims.size()) == count && count <= kMaxOperands) << wrong_count(*k, count);
  void* data[kMaxOperands];
  int64_t shapes[kMaxDims];
  int64_t used = 0;
  for (int64_t i = 0; i < count; ++i) {
    const BE::Tensor& t = *operands[i];
    BE_CHECK(t.ndim() == k->ndims[i] && static_cast<int64_t>(t.element_size()) == k->itemsizes[i])
        << wrong_operand(*k, i, t.ndim(), static_cast<int64_t>(t.element_size()));
    BE_CHECK(used + t.ndim() <= kMaxDims) << "too many dimensions";
    data[i] = t.data_ptr();
    for (int64_t j = 0; j < t.ndim(); ++j) shapes[used++] = t.size(j);
  }
  if (!run(*k, data, shapes)) BE_FAIL() << "the Numba function " << k->name << " raised " << raised_text();
}

// ---- the lean handler ------------------------------------------------------------------------

__attribute__((noinline, cold)) XLA_FFI_Error* fail(const XLA_FFI_CallFrame* frame, XLA_FFI_Error_Code code,
                                                    const std::string& what) {
  return BE::ffi::make_error(frame, code, ("numba_kernel: " + what).c_str());
}

// The kernel_id attribute: the call's only one, a scalar int64 (bridge.py passes it so).
__attribute__((noinline, cold)) XLA_FFI_Error* bad_attributes(const XLA_FFI_CallFrame* frame) {
  std::string got = std::to_string(frame->attrs.size) + " attribute(s)";
  if (frame->attrs.size == 1) {
    const XLA_FFI_ByteSpan* name = frame->attrs.names[0];
    got += ": '" + std::string(name->ptr, name->len) + "'";
    if (frame->attrs.types[0] == XLA_FFI_AttrType_SCALAR) {
      const auto dtype = static_cast<const XLA_FFI_Scalar*>(frame->attrs.attrs[0])->dtype;
      got += std::string(", a scalar of ") + BE::dtype_name(static_cast<BE::DType>(dtype));
    } else {
      got += ", not a scalar";
    }
  }
  return fail(frame, XLA_FFI_Error_Code_INVALID_ARGUMENT,
              "expected exactly one attribute, kernel_id, an int64 scalar (as numba_kernel passes it); got " + got);
}

inline bool is_kernel_id(const XLA_FFI_CallFrame* frame) {
  static constexpr char kName[] = "kernel_id";
  if (frame->attrs.size != 1 || frame->attrs.types[0] != XLA_FFI_AttrType_SCALAR) return false;
  const XLA_FFI_ByteSpan* name = frame->attrs.names[0];
  return name->len == sizeof(kName) - 1 && std::memcmp(name->ptr, kName, sizeof(kName) - 1) == 0 &&
         static_cast<const XLA_FFI_Scalar*>(frame->attrs.attrs[0])->dtype == XLA_FFI_DataType_S64;
}

// Packs the operands into data/shapes (room for count and k.total_dims) and runs the entry.
// `n_args`: the kernel's inputs (BE::ffi::kernel_inputs), then the results.
inline XLA_FFI_Error* pack_and_run(const XLA_FFI_CallFrame* frame, const Kernel& k, int64_t n_args, void** data,
                                   int64_t* shapes) {
  const int64_t count = n_args + frame->rets.size;
  const int64_t* ndims = k.ndims.data();
  const int64_t* itemsizes = k.itemsizes.data();
  int64_t used = 0;
  for (int64_t i = 0; i < count; ++i) {
    const auto* buf = static_cast<const XLA_FFI_Buffer*>(i < n_args ? frame->args.args[i]
                                                                     : frame->rets.rets[i - n_args]);
    const auto itemsize = static_cast<int64_t>(BE::element_size(static_cast<BE::DType>(buf->dtype)));
    // Ranks as compiled, so `used` never passes k.total_dims.
    if (BE_UNLIKELY(buf->rank != ndims[i] || itemsize != itemsizes[i])) {
      return fail(frame, XLA_FFI_Error_Code_INVALID_ARGUMENT, wrong_operand(k, i, buf->rank, itemsize));
    }
    data[i] = buf->data;
    for (int64_t j = 0; j < buf->rank; ++j) shapes[used++] = buf->dims[j];
  }
  if (BE_UNLIKELY(!run(k, data, shapes))) {
    return fail(frame, XLA_FFI_Error_Code_INTERNAL, "the Numba function " + k.name + " raised " + raised_text());
  }
  return nullptr;
}

// Many operands or dimensions: the buffers come from the heap, not a large stack frame.
__attribute__((noinline)) XLA_FFI_Error* pack_and_run_large(const XLA_FFI_CallFrame* frame, const Kernel& k,
                                                            int64_t n_args) {
  std::vector<void*> data(k.ndims.size());
  std::vector<int64_t> shapes(static_cast<std::size_t>(k.total_dims) + 1);
  return pack_and_run(frame, k, n_args, data.data(), shapes.data());
}

constexpr int64_t kSmallOperands = 16;
constexpr int64_t kSmallDims = 64;

XLA_FFI_Error* handle(XLA_FFI_CallFrame* frame) {
  if (auto* query = BE::ffi::metadata_query(frame)) return BE::ffi::answer_metadata(frame, query, 0);
  if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) return nullptr;  // nothing to prepare
  if (BE_UNLIKELY(!is_kernel_id(frame))) return bad_attributes(frame);
  const int64_t id = *static_cast<const int64_t*>(static_cast<const XLA_FFI_Scalar*>(frame->attrs.attrs[0])->value);
  const Kernel* k = find_kernel(id);
  if (BE_UNLIKELY(k == nullptr)) return fail(frame, XLA_FFI_Error_Code_INVALID_ARGUMENT, unregistered(id));
  const int64_t count = static_cast<int64_t>(k->ndims.size());
  const int64_t n_args = BE::ffi::kernel_inputs(frame, count);
  if (BE_UNLIKELY(n_args < 0)) {
    return fail(frame, XLA_FFI_Error_Code_INVALID_ARGUMENT, wrong_count(*k, frame->args.size + frame->rets.size));
  }
  if (BE_UNLIKELY(count > kSmallOperands || k->total_dims > kSmallDims)) return pack_and_run_large(frame, *k, n_args);
  void* data[kSmallOperands];
  int64_t shapes[kSmallDims];
  return pack_and_run(frame, *k, n_args, data, shapes);
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
  k.total_dims = 0;
  for (int64_t i = 0; i < count; ++i) k.total_dims += ndims[i];
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

// The handler brainevent registers for numba_kernel calls (see the comment at the top).
BE_NUMBA_CPU_EXPORT XLA_FFI_Error* be_numba_cpu_handler(XLA_FFI_CallFrame* frame) {
  return be_numba_cpu::handle(frame);
}
