"""C++ source of the launcher that runs precompiled GPU kernels (cubins) on XLA's stream.

Used for kernels that a library compiles to a cubin and whose parameters are plain device
pointers and scalars (Triton's calling convention). A table of kernels, keyed by a content
id, holds each kernel's images per compute capability, its launch configuration and the
layout of its parameters; images are loaded lazily per CUDA context through the driver
API. One small XLA FFI entry per operand count feeds it, as for the Numba-CUDA launcher.
"""

from __future__ import annotations

from ..numba_bridge.entry_source import arity_entry

# Parameter kinds of the layout; keep in step with cubin_launcher.py.
CORE = r"""
#include <cuda.h>
#include <dlfcn.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "brainevent/common.h"

#define BE_CUBIN_EXPORT extern "C" __attribute__((visibility("default")))

namespace be_cubin {

// The driver API through dlopen: no libcuda at link time, so the library builds and loads on
// machines without a driver; the names pin each entry point's ABI version.
struct Driver {
  CUresult (*GetErrorString)(CUresult, const char**) = nullptr;
  CUresult (*CtxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*CtxGetDevice)(CUdevice*) = nullptr;
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
  CUresult (*FuncGetAttribute)(int*, CUfunction_attribute, CUfunction) = nullptr;
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
    bind(lib, r.CtxGetDevice, "cuCtxGetDevice", r.error);
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
    bind(lib, r.FuncGetAttribute, "cuFuncGetAttribute", r.error);
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

// One kernel parameter: a device pointer to an operand (checked to be aligned), a pointer to a
// scratch operand (rounded up to the alignment), a scalar of `size` bytes, or a null pointer.
enum Kind : int64_t { kOperand = 0, kScalar = 1, kNull = 2, kScratch = 3 };
struct Param {
  int64_t kind, value, size;  // operand index or raw scalar bits; alignment or scalar size
};

struct Image {
  std::string code;  // cubin or PTX
  unsigned shared_mem;
};

struct Loaded {
  CUcontext context;
  CUfunction function;
  unsigned shared_mem;
};

struct Kernel {
  std::string entry;
  unsigned grid[3], block[3];
  bool cooperative;
  int64_t operands;
  std::vector<Param> params;
  std::unordered_map<int, Image> images;  // compute capability (major*10+minor) -> image
  std::mutex mutex;                       // guards `loaded`
  std::vector<Loaded> loaded;             // one per CUDA context it was loaded into
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

// Loads the image for `device` into the current context `context`; "" on success. Above 48 KiB
// of dynamic shared memory a kernel must opt in, up to what the device allows.
std::string load_into(Kernel& k, CUcontext context, CUdevice device, Loaded* out) {
  const Driver& d = driver();
  int major = 0, minor = 0;
  d.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  d.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  auto image = k.images.find(major * 10 + minor);
  if (image == k.images.end()) {
    return "no code compiled for compute capability " + std::to_string(major) + "." + std::to_string(minor);
  }
  CUmodule module = nullptr;
  CUresult status = d.ModuleLoadData(&module, image->second.code.data());
  if (status != CUDA_SUCCESS) return "cuModuleLoadData failed: " + describe(status);
  CUfunction function = nullptr;
  status = d.ModuleGetFunction(&function, module, k.entry.c_str());
  if (status != CUDA_SUCCESS) return "cuModuleGetFunction(" + k.entry + ") failed: " + describe(status);
  const unsigned shared = image->second.shared_mem;
  if (shared > 48 * 1024) {
    int optin = 0, fixed = 0;
    d.DeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device);
    d.FuncGetAttribute(&fixed, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function);
    if (static_cast<int64_t>(shared) + fixed > optin) {
      return "the kernel needs " + std::to_string(shared) + " bytes of shared memory, the device allows " +
             std::to_string(optin - fixed);
    }
    status = d.FuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, optin - fixed);
    if (status != CUDA_SUCCESS) return "cannot allow " + std::to_string(shared) +
                                       " bytes of shared memory: " + describe(status);
  }
  *out = {context, function, shared};
  k.loaded.push_back(*out);
  return "";
}

// The kernel as loaded in the current context (the FFI binding made XLA's device current).
Loaded loaded_for_current(Kernel& k) {
  const Driver& d = driver();
  CUcontext context = nullptr;
  CUresult status = d.CtxGetCurrent(&context);
  BE_CHECK(status == CUDA_SUCCESS && context != nullptr) << "no current CUDA context: " << describe(status);
  std::lock_guard<std::mutex> lock(k.mutex);
  for (const Loaded& l : k.loaded) {
    if (l.context == context) return l;
  }
  CUdevice device = 0;
  status = d.CtxGetDevice(&device);
  BE_CHECK(status == CUDA_SUCCESS) << "cuCtxGetDevice failed: " << describe(status);
  Loaded made{};
  const std::string error = load_into(k, context, device, &made);
  BE_CHECK(error.empty()) << "GPU kernel " << k.entry << ": " << error;
  return made;
}

constexpr int kMaxParams = 512;

void launch_kernel(int64_t id, const BE::Tensor* const* operands, int64_t count, int64_t stream) {
  BE_CHECK(driver().error.empty()) << driver().error;
  Kernel* k = find(id);
  BE_CHECK(k != nullptr) << "GPU kernel id " << id
                         << " is not registered in this process; trace the function that calls it "
                            "again (jax.jit retraces in a new process) to register it";
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
  const Loaded l = loaded_for_current(*k);
  const Driver& d = driver();
  CUstream s = reinterpret_cast<CUstream>(stream);
  CUresult status = k->cooperative
      ? d.LaunchCooperativeKernel(l.function, k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1],
                                  k->block[2], l.shared_mem, s, pointers)
      : d.LaunchKernel(l.function, k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1],
                       k->block[2], l.shared_mem, s, pointers, nullptr);
  BE_CHECK(status == CUDA_SUCCESS) << "launching GPU kernel " << k->entry << " failed: " << describe(status);
}

}  // namespace be_cubin

// ---- called from Python through ctypes, once per kernel ----

// config: grid x y z, block x y z. params: (kind, value, size) triplets. Returns 0, or 1 if the
// id is already registered (same content: nothing to do).
BE_CUBIN_EXPORT int be_cubin_register(int64_t id, const char* entry, const int64_t* config,
                                      int64_t cooperative, int64_t operands, const int64_t* params,
                                      int64_t n_params) {
  using namespace be_cubin;
  std::lock_guard<std::mutex> lock(table_mutex);
  if (table().count(id) != 0) return 1;
  auto k = std::make_unique<Kernel>();
  k->entry = entry;
  for (int i = 0; i < 3; ++i) {
    k->grid[i] = static_cast<unsigned>(config[i]);
    k->block[i] = static_cast<unsigned>(config[3 + i]);
  }
  k->cooperative = cooperative != 0;
  k->operands = operands;
  for (int64_t i = 0; i < n_params; ++i) {
    k->params.push_back({params[3 * i], params[3 * i + 1], params[3 * i + 2]});
  }
  table()[id] = std::move(k);
  return 0;
}

BE_CUBIN_EXPORT void be_cubin_add_image(int64_t id, int64_t cc, const char* data, int64_t size,
                                        int64_t shared_mem) {
  using namespace be_cubin;
  Kernel* k = find(id);
  if (k == nullptr) return;
  std::lock_guard<std::mutex> lock(k->mutex);
  k->images[static_cast<int>(cc)] = {std::string(data, static_cast<size_t>(size)),
                                     static_cast<unsigned>(shared_mem)};
}

// Loads the kernel into every device's primary context that is already active (XLA's), so a
// launch captured into a CUDA graph never loads a module. Returns "" or an error.
BE_CUBIN_EXPORT const char* be_cubin_preload(int64_t id) {
  using namespace be_cubin;
  static thread_local std::string message;
  message.clear();
  const Driver& d = driver();
  if (!d.error.empty()) return "";  // no driver, so no active context: a launch reports it
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
        Loaded made{};
        std::string error = load_into(*k, context, device, &made);
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
    return arity_entry("launch", "be_cubin::launch_kernel", n_inputs, n_outputs, stream=True)
