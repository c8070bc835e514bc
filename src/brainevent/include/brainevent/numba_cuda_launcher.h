// brainevent/numba_cuda_launcher.h - the compiled launcher that runs Numba-CUDA kernels on
// XLA's stream. Internal: the one header of a launcher library; brainevent appends one small
// XLA FFI entry per operand count that calls be_numba_cuda::launch_kernel.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "brainevent/check.h"  // what it uses, whatever common.h left out
#include "brainevent/common.h"
#include "brainevent/cuda_kernel_table.h"

namespace be_numba_cuda {
namespace {

using namespace be_cuda_launch;

struct Kernel : KernelBase {
  unsigned shared_mem = 0;  // every image's dynamic shared memory
  std::vector<int64_t> ndims, itemsizes;
};

constexpr int kMaxSlots = 1024;

// Numba passes each array as meminfo, parent, nitems, itemsize, data, shape[ndim] and
// strides[ndim] (bytes), every field 8 bytes wide (numba-cuda's _Kernel._prepare_args).
[[maybe_unused]] void launch_kernel(int64_t id, const BE::Tensor* const* operands, int64_t count, int64_t stream) {
  Kernel* k = &registered<Kernel>(id, "Numba-CUDA kernel",
                                  "call the wrapper from brainevent.numba_cuda_kernel again to register it");
  BE_CHECK(static_cast<int64_t>(k->ndims.size()) == count)
      << "kernel " << k->entry << " was compiled for " << static_cast<int64_t>(k->ndims.size())
      << " arrays, the call passes " << count;
  int64_t slots[kMaxSlots];
  void* params[kMaxSlots];
  int used = 0;
  for (int64_t i = 0; i < count; ++i) {
    const BE::Tensor& t = *operands[i];
    const int64_t itemsize = static_cast<int64_t>(t.element_size());
    // A changed rank (e.g. vmap with a method that adds a batch axis) would shift every
    // later parameter: refuse instead of launching with a wrong layout.
    BE_CHECK(t.ndim() == k->ndims[i] && itemsize == k->itemsizes[i])
        << "array " << i << " has rank " << t.ndim() << " and itemsize " << itemsize
        << ", the kernel was compiled for rank " << k->ndims[i] << " and itemsize " << k->itemsizes[i];
    BE_CHECK(used + 5 + 2 * t.ndim() <= kMaxSlots) << "too many kernel parameters";
    slots[used++] = 0;  // meminfo
    slots[used++] = 0;  // parent
    slots[used++] = t.numel();
    slots[used++] = itemsize;
    slots[used++] = reinterpret_cast<int64_t>(t.data_ptr());
    for (int64_t j = 0; j < t.ndim(); ++j) slots[used++] = t.size(j);
    for (int64_t j = 0; j < t.ndim(); ++j) slots[used++] = t.stride(j) * itemsize;
  }
  for (int i = 0; i < used; ++i) params[i] = &slots[i];
  launch(*k, stream, params);
}

}  // namespace
}  // namespace be_numba_cuda

// ---- called from Python through ctypes, once per kernel ----

// config: grid x y z, block x y z, shared memory bytes. Returns 0, or 1 if already present.
BE_LAUNCHER_EXPORT int be_numba_cuda_register(int64_t id, const char* entry, const int64_t* config,
                                              int64_t cooperative, const int64_t* ndims,
                                              const int64_t* itemsizes, int64_t count) {
  using be_numba_cuda::Kernel;
  return be_cuda_launch::register_kernel<Kernel>(id, [&] {
    auto k = std::make_unique<Kernel>();
    k->label = "Numba kernel";
    be_cuda_launch::set_launch(*k, entry, config, cooperative);
    k->shared_mem = static_cast<unsigned>(config[6]);
    k->ndims.assign(ndims, ndims + count);
    k->itemsizes.assign(itemsizes, itemsizes + count);
    return k;
  });
}

BE_LAUNCHER_EXPORT void be_numba_cuda_add_image(int64_t id, int64_t cc, const char* data, int64_t size) {
  using be_numba_cuda::Kernel;
  Kernel* k = be_cuda_launch::table<Kernel>().find(id);
  if (k != nullptr) be_cuda_launch::add_image<Kernel>(id, cc, data, size, k->shared_mem);
}

BE_LAUNCHER_EXPORT const char* be_numba_cuda_preload(int64_t id) {
  return be_cuda_launch::preload<be_numba_cuda::Kernel>(id, /*need_driver=*/true);
}
