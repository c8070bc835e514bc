// brainevent/cuda_kernel_table.h - what the launchers of precompiled GPU kernels share.
//
// Internal. The Numba-CUDA launcher (numba_cuda_launcher.h) and the cubin launcher
// (cubin_launcher.h, Triton's calling convention) each keep a table of kernels keyed by a
// content id. A kernel holds its images (cubin or PTX) per compute capability and its
// launch configuration; an image is loaded lazily into each CUDA context through the
// driver API, or up front by preload() into the contexts XLA already made. The two
// launchers differ only in how they lay out a kernel's parameters.
//
// Everything here has internal linkage (an unnamed namespace): each launcher library has
// its own table and driver handle, whatever else the process has loaded.
#pragma once

#include <cuda.h>
#include <dlfcn.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "brainevent/check.h"  // what it uses, whatever common.h left out
#include "brainevent/common.h"

#define BE_LAUNCHER_EXPORT extern "C" __attribute__((visibility("default")))

namespace be_cuda_launch {
namespace {

// The driver API through dlopen: the library links no libcuda (none at build time on
// machines without a driver), and the symbol names pin each entry point's ABI version.
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

struct Image {
  std::string code;  // cubin or PTX
  unsigned shared_mem;
};

struct Loaded {
  CUcontext context;
  CUfunction function;
  unsigned shared_mem;
};

// What every kernel has; a launcher's Kernel adds its parameter layout.
struct KernelBase {
  const char* label = "GPU kernel";  // how messages name it
  std::string entry;
  unsigned grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  bool cooperative = false;
  std::unordered_map<int, Image> images;  // compute capability (major*10+minor) -> image
  std::mutex mutex;                       // guards `images` and `loaded`
  std::vector<Loaded> loaded;             // one per CUDA context it was loaded into
};

// config: grid x y z, block x y z.
void set_launch(KernelBase& k, const char* entry, const int64_t* config, int64_t cooperative) {
  k.entry = entry;
  for (int i = 0; i < 3; ++i) {
    k.grid[i] = static_cast<unsigned>(config[i]);
    k.block[i] = static_cast<unsigned>(config[3 + i]);
  }
  k.cooperative = cooperative != 0;
}

// Kernels by content id; entries are never erased, so a found pointer stays valid.
template <typename Kernel>
struct Table {
  std::mutex mutex;
  std::unordered_map<int64_t, std::unique_ptr<Kernel>> kernels;

  Kernel* find(int64_t id) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = kernels.find(id);
    return it == kernels.end() ? nullptr : it->second.get();
  }
};

template <typename Kernel>
Table<Kernel>& table() {
  static auto* t = new Table<Kernel>();  // never destroyed: XLA may call in after exit starts
  return *t;
}

// The kernel registered under `id`, for a launch; BE::Error (with `hint`, how to register
// it) when there is no driver or no such kernel.
template <typename Kernel>
Kernel& registered(int64_t id, const char* what, const char* hint) {
  BE_CHECK(driver().error.empty()) << driver().error;
  Kernel* k = table<Kernel>().find(id);
  BE_CHECK(k != nullptr) << what << " id " << id << " is not registered in this process; " << hint;
  return *k;
}

// Inserts the kernel `make()` builds under `id`; 0, or 1 (nothing done) if `id` is present.
template <typename Kernel, typename Make>
int register_kernel(int64_t id, Make make) {
  Table<Kernel>& t = table<Kernel>();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (t.kernels.count(id) != 0) return 1;
  t.kernels[id] = make();
  return 0;
}

template <typename Kernel>
void add_image(int64_t id, int64_t cc, const char* data, int64_t size, unsigned shared_mem) {
  Kernel* k = table<Kernel>().find(id);
  if (k == nullptr) return;
  std::lock_guard<std::mutex> lock(k->mutex);
  k->images[static_cast<int>(cc)] = {std::string(data, static_cast<size_t>(size)), shared_mem};
}

// Loads the image for `device` into the current context `context` (k.mutex held); "" on
// success. Above 48 KiB of dynamic shared memory a kernel must opt in, up to what the device allows.
std::string load_into(KernelBase& k, CUcontext context, CUdevice device, Loaded* out) {
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
    if (status != CUDA_SUCCESS) {
      return "cannot allow " + std::to_string(shared) + " bytes of shared memory: " + describe(status);
    }
  }
  *out = {context, function, shared};
  k.loaded.push_back(*out);
  return "";
}

// The kernel as loaded in the current context (the FFI binding made XLA's device current).
Loaded loaded_for_current(KernelBase& k) {
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
  BE_CHECK(error.empty()) << k.label << " " << k.entry << " on device " << static_cast<int>(device) << ": "
                          << error;
  return made;
}

// Launches `k` on `stream` with the kernel parameters `params` (pointers to each value).
void launch(KernelBase& k, int64_t stream, void** params) {
  const Loaded l = loaded_for_current(k);
  const Driver& d = driver();
  CUstream s = reinterpret_cast<CUstream>(stream);
  CUresult status = k.cooperative
      ? d.LaunchCooperativeKernel(l.function, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1],
                                  k.block[2], l.shared_mem, s, params)
      : d.LaunchKernel(l.function, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2],
                       l.shared_mem, s, params, nullptr);
  BE_CHECK(status == CUDA_SUCCESS) << "launching " << k.label << " " << k.entry << " failed: " << describe(status);
}

// Loads kernel `id` into every device's primary context that is already active (XLA's), so
// that a launch captured into a CUDA graph never loads a module. Returns "" or an error;
// without a driver, the driver's error when `need_driver`, else "" (a launch reports it).
template <typename Kernel>
const char* preload(int64_t id, bool need_driver) {
  static thread_local std::string message;
  message.clear();
  const Driver& d = driver();
  if (!d.error.empty()) return need_driver ? (message = d.error).c_str() : "";
  Kernel* k = table<Kernel>().find(id);
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

}  // namespace
}  // namespace be_cuda_launch
