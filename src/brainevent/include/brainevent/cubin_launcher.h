// brainevent/cubin_launcher.h - the launcher that runs precompiled GPU kernels (cubins) on
// XLA's stream, for kernels whose parameters are plain device pointers and scalars
// (Triton's calling convention). Internal: the one header of a launcher library;
// brainevent appends one small XLA FFI entry per operand count that calls
// be_cubin::launch_kernel.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "brainevent/check.h"  // what it uses, whatever common.h left out
#include "brainevent/common.h"
#include "brainevent/cuda_kernel_table.h"

namespace be_cubin {
namespace {

using namespace be_cuda_launch;

// One kernel parameter: a device pointer to an operand (checked to be aligned), a pointer to a
// scratch operand (rounded up to the alignment), a scalar of `size` bytes, or a null pointer.
// Keep in step with launchers/cubin.py.
enum Kind : int64_t { kOperand = 0, kScalar = 1, kNull = 2, kScratch = 3 };
struct Param {
  int64_t kind, value, size;  // operand index or raw scalar bits; alignment or scalar size
};

struct Kernel : KernelBase {
  int64_t operands = 0;
  std::vector<Param> params;
};

constexpr int kMaxParams = 512;

[[maybe_unused]] void launch_kernel(int64_t id, const BE::Tensor* const* operands, int64_t count, int64_t stream) {
  Kernel* k = &registered<Kernel>(id, "GPU kernel",
                                  "trace the function that calls it again (jax.jit retraces in a new process) "
                                  "to register it");
  BE_CHECK(k->operands == count) << "kernel " << k->entry << " was prepared for " << k->operands
                                 << " arrays, the call passes " << count;
  const int n = static_cast<int>(k->params.size());
  BE_CHECK(n <= kMaxParams) << "kernel " << k->entry << " has too many parameters (" << n << ")";
  uint64_t slots[kMaxParams];
  void* pointers[kMaxParams];
  for (int i = 0; i < n; ++i) {
    const Param& p = k->params[i];
    uint64_t slot = 0;
    if (p.kind == kOperand || p.kind == kScratch) {
      BE_CHECK(p.value >= 0 && p.value < count) << "parameter " << i << " names operand " << p.value;
      uint64_t address = reinterpret_cast<uint64_t>(operands[p.value]->data_ptr());
      const uint64_t align = p.size > 0 ? static_cast<uint64_t>(p.size) : 1;
      if (p.kind == kScratch) {
        address = (address + align - 1) / align * align;
      } else {
        // The kernel was compiled assuming this alignment; a misaligned buffer would be read wrongly.
        BE_CHECK(address % align == 0) << "kernel " << k->entry << ": array " << p.value
                                       << " is not aligned to " << align << " bytes";
      }
      slot = address;
    } else if (p.kind == kScalar) {
      slot = static_cast<uint64_t>(p.value);  // little-endian: the low `size` bytes are the value
    }
    slots[i] = slot;
    pointers[i] = &slots[i];
  }
  if (static_cast<uint64_t>(k->grid[0]) * k->grid[1] * k->grid[2] == 0) return;  // nothing to do
  launch(*k, stream, pointers);
}

}  // namespace
}  // namespace be_cubin

// ---- called from Python through ctypes, once per kernel ----

// config: grid x y z, block x y z. params: (kind, value, size) triplets. Returns 0, or 1 if the
// id is already registered (same content: nothing to do).
BE_LAUNCHER_EXPORT int be_cubin_register(int64_t id, const char* entry, const int64_t* config,
                                         int64_t cooperative, int64_t operands, const int64_t* params,
                                         int64_t n_params) {
  using be_cubin::Kernel;
  return be_cuda_launch::register_kernel<Kernel>(id, [&] {
    auto k = std::make_unique<Kernel>();
    be_cuda_launch::set_launch(*k, entry, config, cooperative);
    k->operands = operands;
    for (int64_t i = 0; i < n_params; ++i) {
      k->params.push_back({params[3 * i], params[3 * i + 1], params[3 * i + 2]});
    }
    return k;
  });
}

BE_LAUNCHER_EXPORT void be_cubin_add_image(int64_t id, int64_t cc, const char* data, int64_t size,
                                           int64_t shared_mem) {
  be_cuda_launch::add_image<be_cubin::Kernel>(id, cc, data, size, static_cast<unsigned>(shared_mem));
}

BE_LAUNCHER_EXPORT const char* be_cubin_preload(int64_t id) {
  return be_cuda_launch::preload<be_cubin::Kernel>(id, /*need_driver=*/false);
}
