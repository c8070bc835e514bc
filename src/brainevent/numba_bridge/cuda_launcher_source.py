"""C++ source of the compiled launcher that runs Numba-CUDA kernels on XLA's stream.

One shared core (a table of kernels keyed by a content id, loaded lazily per CUDA
context through the driver API) and one small XLA FFI entry per operand count: our
arg_spec has a fixed arity, and a per-arity entry keeps every call free of padding
operands or extra attributes.
"""

from __future__ import annotations

from .entry_source import arity_entry

# Numba passes each array as meminfo, parent, nitems, itemsize, data, shape[ndim] and
# strides[ndim] (bytes), every field 8 bytes wide (numba-cuda's _Kernel._prepare_args).
CORE = r"""
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "brainevent/common.h"

#define BE_NC_EXPORT extern "C" __attribute__((visibility("default")))

namespace be_numba_cuda {

// The driver API through dlopen: the library links no libcuda (none at build time on
// machines without a driver), and the symbol names pin each entry point's ABI version.
struct Driver {
  CUresult (*GetErrorString)(CUresult, const char**) = nullptr;
  CUresult (*CtxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*DeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*DeviceGetAttribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*DeviceGetCount)(int*) = nullptr;
  CUresult (*PrimaryCtxGetState)(CUdevice, unsigned int*, int*) = nullptr;
  CUresult (*PrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*PrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*CtxPushCurrent)(CUcontext) = nullptr;
  CUresult (*CtxPopCurrent)(CUcontext*) = nullptr;
  CUresult (*ModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*FuncSetAttribute)(CUfunction, CUfunction_attribute, int) = nullptr;
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*LaunchCooperativeKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                      unsigned, unsigned, CUstream, void**) = nullptr;
  std::string error;
};

template <typename F>
void bind(void* lib, F& slot, const char* name, std::string& error) {
  slot = reinterpret_cast<F>(dlsym(lib, name));
  if (slot == nullptr && error.empty()) error = std::string("libcuda lacks ") + name;
}

const Driver& driver() {
  static const Driver d = [] {
    Driver r;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      r.error = "cannot dlopen libcuda.so.1 (is an NVIDIA driver installed?)";
      return r;
    }
    bind(lib, r.GetErrorString, "cuGetErrorString", r.error);
    bind(lib, r.CtxGetCurrent, "cuCtxGetCurrent", r.error);
    bind(lib, r.DeviceGet, "cuDeviceGet", r.error);
    bind(lib, r.DeviceGetAttribute, "cuDeviceGetAttribute", r.error);
    bind(lib, r.DeviceGetCount, "cuDeviceGetCount", r.error);
    bind(lib, r.PrimaryCtxGetState, "cuDevicePrimaryCtxGetState", r.error);
    bind(lib, r.PrimaryCtxRetain, "cuDevicePrimaryCtxRetain", r.error);
    bind(lib, r.PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", r.error);
    bind(lib, r.CtxPushCurrent, "cuCtxPushCurrent_v2", r.error);
    bind(lib, r.CtxPopCurrent, "cuCtxPopCurrent_v2", r.error);
    bind(lib, r.ModuleLoadData, "cuModuleLoadData", r.error);
    bind(lib, r.ModuleGetFunction, "cuModuleGetFunction", r.error);
    bind(lib, r.FuncSetAttribute, "cuFuncSetAttribute", r.error);
    bind(lib, r.LaunchKernel, "cuLaunchKernel", r.error);
    bind(lib, r.LaunchCooperativeKernel, "cuLaunchCooperativeKernel", r.error);
    return r;
  }();
  return d;
}

std::string describe(CUresult status) {
  const char* text = nullptr;
  if (driver().GetErrorString == nullptr || driver().GetErrorString(status, &text) != CUDA_SUCCESS ||
      text == nullptr) {
    text = "unknown CUDA error";
  }
  return std::string(text) + " (" + std::to_string(static_cast<int>(status)) + ")";
}

struct Loaded {
  CUcontext context;
  CUfunction function;
};

struct Kernel {
  std::string entry;
  unsigned grid[3], block[3], shared_mem;
  bool cooperative;
  std::vector<int64_t> ndims, itemsizes;
  std::unordered_map<int, std::string> images;  // compute capability (major*10+minor) -> cubin/PTX
  std::mutex mutex;                              // guards `loaded`
  std::vector<Loaded> loaded;                    // one per CUDA context it was loaded into
};

std::mutex table_mutex;
std::unordered_map<int64_t, std::unique_ptr<Kernel>>& table() {
  static auto* t = new std::unordered_map<int64_t, std::unique_ptr<Kernel>>();  // never destroyed
  return *t;
}

Kernel* find(int64_t id) {
  std::lock_guard<std::mutex> lock(table_mutex);
  auto it = table().find(id);
  return it == table().end() ? nullptr : it->second.get();
}

// Loads the kernel's image into `context` (already current) for `device`; "" on success.
std::string load_into(Kernel& k, CUcontext context, CUdevice device, CUfunction* out) {
  const Driver& d = driver();
  int major = 0, minor = 0;
  d.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  d.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  auto image = k.images.find(major * 10 + minor);
  if (image == k.images.end()) {
    return "no code compiled for compute capability " + std::to_string(major) + "." + std::to_string(minor);
  }
  CUmodule module = nullptr;
  CUresult status = d.ModuleLoadData(&module, image->second.data());
  if (status != CUDA_SUCCESS) return "cuModuleLoadData failed: " + describe(status);
  CUfunction function = nullptr;
  status = d.ModuleGetFunction(&function, module, k.entry.c_str());
  if (status != CUDA_SUCCESS) return "cuModuleGetFunction(" + k.entry + ") failed: " + describe(status);
  if (k.shared_mem > 48 * 1024) {  // above 48 KiB dynamic shared memory must be opted into
    status = d.FuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                static_cast<int>(k.shared_mem));
    if (status != CUDA_SUCCESS) return "cannot allow " + std::to_string(k.shared_mem) +
                                       " bytes of shared memory: " + describe(status);
  }
  k.loaded.push_back({context, function});
  *out = function;
  return "";
}

// The kernel's function in the current context (the binding made XLA's device current).
CUfunction function_for_current(Kernel& k) {
  const Driver& d = driver();
  CUcontext context = nullptr;
  CUresult status = d.CtxGetCurrent(&context);
  BE_CHECK(status == CUDA_SUCCESS && context != nullptr) << "no current CUDA context: " << describe(status);
  std::lock_guard<std::mutex> lock(k.mutex);
  for (const Loaded& l : k.loaded) {
    if (l.context == context) return l.function;
  }
  int ordinal = 0;
  BE_CHECK(cudaGetDevice(&ordinal) == cudaSuccess) << "cudaGetDevice failed";
  CUdevice device = 0;
  status = d.DeviceGet(&device, ordinal);
  BE_CHECK(status == CUDA_SUCCESS) << "cuDeviceGet failed: " << describe(status);
  CUfunction function = nullptr;
  const std::string error = load_into(k, context, device, &function);
  BE_CHECK(error.empty()) << "Numba kernel " << k.entry << " on device " << ordinal << ": " << error;
  return function;
}

constexpr int kMaxSlots = 1024;

void launch_kernel(int64_t id, const BE::Tensor* const* operands, int64_t count, int64_t stream) {
  BE_CHECK(driver().error.empty()) << driver().error;
  Kernel* k = find(id);
  BE_CHECK(k != nullptr) << "Numba-CUDA kernel id " << id
                         << " is not registered in this process; call the wrapper from "
                            "brainevent.numba_cuda_kernel again to register it";
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
  CUfunction function = function_for_current(*k);
  const Driver& d = driver();
  CUstream s = reinterpret_cast<CUstream>(stream);
  CUresult status = k->cooperative
      ? d.LaunchCooperativeKernel(function, k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1],
                                  k->block[2], k->shared_mem, s, params)
      : d.LaunchKernel(function, k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1],
                       k->block[2], k->shared_mem, s, params, nullptr);
  BE_CHECK(status == CUDA_SUCCESS) << "launching Numba kernel " << k->entry << " failed: "
                                   << describe(status);
}

}  // namespace be_numba_cuda

// ---- called from Python through ctypes, once per kernel ----

// config: grid x y z, block x y z, shared memory bytes. Returns 0, or 1 if already present.
BE_NC_EXPORT int be_numba_cuda_register(int64_t id, const char* entry, const int64_t* config,
                                        int64_t cooperative, const int64_t* ndims,
                                        const int64_t* itemsizes, int64_t count) {
  using namespace be_numba_cuda;
  std::lock_guard<std::mutex> lock(table_mutex);
  if (table().count(id) != 0) return 1;
  auto k = std::make_unique<Kernel>();
  k->entry = entry;
  for (int i = 0; i < 3; ++i) {
    k->grid[i] = static_cast<unsigned>(config[i]);
    k->block[i] = static_cast<unsigned>(config[3 + i]);
  }
  k->shared_mem = static_cast<unsigned>(config[6]);
  k->cooperative = cooperative != 0;
  k->ndims.assign(ndims, ndims + count);
  k->itemsizes.assign(itemsizes, itemsizes + count);
  table()[id] = std::move(k);
  return 0;
}

BE_NC_EXPORT void be_numba_cuda_add_image(int64_t id, int64_t cc, const char* data, int64_t size) {
  using namespace be_numba_cuda;
  Kernel* k = find(id);
  if (k == nullptr) return;
  std::lock_guard<std::mutex> lock(k->mutex);
  k->images[static_cast<int>(cc)] = std::string(data, static_cast<size_t>(size));
}

// Loads the kernel into every device's primary context that is already active (XLA's),
// so that a launch captured into a CUDA graph never loads a module. Returns "" or an error.
BE_NC_EXPORT const char* be_numba_cuda_preload(int64_t id) {
  using namespace be_numba_cuda;
  static thread_local std::string message;
  message.clear();
  const Driver& d = driver();
  if (!d.error.empty()) return (message = d.error).c_str();
  Kernel* k = find(id);
  if (k == nullptr) return (message = "unknown kernel id").c_str();
  int count = 0;
  if (d.DeviceGetCount(&count) != CUDA_SUCCESS) return "";  // no initialised driver yet: load lazily
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    CUdevice device = 0;
    unsigned flags = 0;
    int active = 0;
    if (d.DeviceGet(&device, ordinal) != CUDA_SUCCESS) continue;
    if (d.PrimaryCtxGetState(device, &flags, &active) != CUDA_SUCCESS || !active) continue;
    CUcontext context = nullptr;
    if (d.PrimaryCtxRetain(&context, device) != CUDA_SUCCESS) continue;
    {
      std::lock_guard<std::mutex> lock(k->mutex);
      bool present = false;
      for (const Loaded& l : k->loaded) present = present || l.context == context;
      if (!present && d.CtxPushCurrent(context) == CUDA_SUCCESS) {
        CUfunction function = nullptr;
        std::string error = load_into(*k, context, device, &function);
        CUcontext popped = nullptr;
        d.CtxPopCurrent(&popped);
        if (!error.empty()) message = "device " + std::to_string(ordinal) + ": " + error;
      }
    }
    d.PrimaryCtxRelease(device);
    if (!message.empty()) break;
  }
  return message.c_str();
}
"""


def entry_source(n_inputs: int, n_outputs: int) -> str:
    """The XLA FFI entry for ``n_inputs`` inputs and ``n_outputs`` outputs."""
    return arity_entry("launch", "be_numba_cuda::launch_kernel", n_inputs, n_outputs, stream=True)
