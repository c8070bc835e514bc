// brainevent/cuda_kernel_table.h - what the launchers of precompiled GPU kernels share.
//
// Internal. The cubin launcher (cubin_launcher.h: NVRTC, Triton and Numba-CUDA kernels) keeps
// a table of kernels keyed by a content id. A kernel holds its images (cubin or PTX) per
// compute capability and its launch configuration; an image is loaded lazily into each CUDA
// context through the driver API, or up front by preload() into the contexts XLA already made.
// The Numba-callable launcher uses the driver handle alone.
//
// Everything here has internal linkage (an unnamed namespace): each launcher library has
// its own table and driver handle, whatever else the process has loaded.
#pragma once

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

// The driver API's types and the few constants used, as cuda.h has them (handles are opaque
// pointers, enums are int): the launchers compile with a plain host compiler, no CUDA headers.
using Result = int;  // CUresult
using Device = int;  // CUdevice
using Context = struct CUctx_st*;
using Module = struct CUmod_st*;
using Function = struct CUfunc_st*;
using Stream = struct CUstream_st*;  // XLA's cudaStream_t is the same pointer
constexpr Result kSuccess = 0;
constexpr int kComputeMajor = 75, kComputeMinor = 76, kSharedOptin = 97;  // CUdevice_attribute
constexpr int kFuncSharedBytes = 1, kFuncMaxDynamicShared = 8;            // CUfunction_attribute

// The driver API through dlopen: the library links no libcuda (none at build time on
// machines without a driver), and the symbol names pin each entry point's ABI version.
struct Driver {
  Result (*GetErrorString)(Result, const char**) = nullptr;
  Result (*CtxGetCurrent)(Context*) = nullptr;
  Result (*CtxGetDevice)(Device*) = nullptr;
  Result (*StreamGetCtx)(Stream, Context*) = nullptr;
  Result (*DeviceGet)(Device*, int) = nullptr;
  Result (*DeviceGetAttribute)(int*, int, Device) = nullptr;
  Result (*DeviceGetCount)(int*) = nullptr;
  Result (*PrimaryCtxGetState)(Device, unsigned int*, int*) = nullptr;
  Result (*PrimaryCtxRetain)(Context*, Device) = nullptr;
  Result (*PrimaryCtxRelease)(Device) = nullptr;
  Result (*CtxPushCurrent)(Context) = nullptr;
  Result (*CtxPopCurrent)(Context*) = nullptr;
  Result (*ModuleLoadData)(Module*, const void*) = nullptr;
  Result (*ModuleGetFunction)(Function*, Module, const char*) = nullptr;
  Result (*FuncGetAttribute)(int*, int, Function) = nullptr;
  Result (*FuncSetAttribute)(Function, int, int) = nullptr;
  Result (*LaunchKernel)(Function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, Stream,
                         void**, void**) = nullptr;
  Result (*LaunchCooperativeKernel)(Function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    unsigned, Stream, void**) = nullptr;
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
    bind(lib, r.StreamGetCtx, "cuStreamGetCtx", r.error);
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

std::string describe(Result status) {
  const char* text = nullptr;
  if (driver().GetErrorString == nullptr || driver().GetErrorString(status, &text) != kSuccess ||
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
  Context context;
  Function function;
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

// Loads the image for `device` into the current context `context` (k.mutex held); "" on
// success. Above 48 KiB of dynamic shared memory a kernel must opt in, up to what the device allows.
std::string load_into(KernelBase& k, Context context, Device device, Loaded* out) {
  const Driver& d = driver();
  int major = 0, minor = 0;
  d.DeviceGetAttribute(&major, kComputeMajor, device);
  d.DeviceGetAttribute(&minor, kComputeMinor, device);
  auto image = k.images.find(major * 10 + minor);
  if (image == k.images.end()) {
    return "no code compiled for compute capability " + std::to_string(major) + "." + std::to_string(minor);
  }
  Module module = nullptr;
  Result status = d.ModuleLoadData(&module, image->second.code.data());
  if (status != kSuccess) return "cuModuleLoadData failed: " + describe(status);
  Function function = nullptr;
  status = d.ModuleGetFunction(&function, module, k.entry.c_str());
  if (status != kSuccess) return "cuModuleGetFunction(" + k.entry + ") failed: " + describe(status);
  const unsigned shared = image->second.shared_mem;
  if (shared > 48 * 1024) {
    int optin = 0, fixed = 0;
    d.DeviceGetAttribute(&optin, kSharedOptin, device);
    d.FuncGetAttribute(&fixed, kFuncSharedBytes, function);
    if (static_cast<int64_t>(shared) + fixed > optin) {
      return "the kernel needs " + std::to_string(shared) + " bytes of shared memory, the device allows " +
             std::to_string(optin - fixed);
    }
    status = d.FuncSetAttribute(function, kFuncMaxDynamicShared, optin - fixed);
    if (status != kSuccess) {
      return "cannot allow " + std::to_string(shared) + " bytes of shared memory: " + describe(status);
    }
  }
  *out = {context, function, shared};
  k.loaded.push_back(*out);
  return "";
}

// The kernel as loaded in `context`, the current one (loaded now on first use there).
Loaded loaded_in(KernelBase& k, Context context) {
  std::lock_guard<std::mutex> lock(k.mutex);
  for (const Loaded& l : k.loaded) {
    if (l.context == context) return l;
  }
  Device device = 0;
  const Result status = driver().CtxGetDevice(&device);
  BE_CHECK(status == kSuccess) << "cuCtxGetDevice failed: " << describe(status);
  Loaded made{};
  const std::string error = load_into(k, context, device, &made);
  BE_CHECK(error.empty()) << k.label << " " << k.entry << " on device " << static_cast<int>(device) << ": "
                          << error;
  return made;
}

// Makes `context` current for its lifetime, if another one was (restored on any exit).
struct ScopedContext {
  bool pushed = false;
  explicit ScopedContext(Context context) {
    Context current = nullptr;
    if (driver().CtxGetCurrent(&current) == kSuccess && current == context) return;
    const Result status = driver().CtxPushCurrent(context);
    BE_CHECK(status == kSuccess) << "cuCtxPushCurrent failed: " << describe(status);
    pushed = true;
  }
  ~ScopedContext() {
    Context popped = nullptr;
    if (pushed) driver().CtxPopCurrent(&popped);
  }
};

// Launches `k` on XLA's `stream` with the kernel parameters `params` (pointers to each value),
// in the stream's context: the thread XLA calls from may have another device's context current.
void launch(KernelBase& k, int64_t stream, void** params) {
  const Driver& d = driver();
  Stream s = reinterpret_cast<Stream>(stream);
  Context context = nullptr;
  Result status = d.StreamGetCtx(s, &context);
  BE_CHECK(status == kSuccess && context != nullptr) << "cuStreamGetCtx failed: " << describe(status);
  ScopedContext scoped(context);
  const Loaded l = loaded_in(k, context);
  status = k.cooperative
      ? d.LaunchCooperativeKernel(l.function, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1],
                                  k.block[2], l.shared_mem, s, params)
      : d.LaunchKernel(l.function, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2],
                       l.shared_mem, s, params, nullptr);
  BE_CHECK(status == kSuccess) << "launching " << k.label << " " << k.entry << " failed: " << describe(status);
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
  if (d.DeviceGetCount(&count) != kSuccess) return "";  // no initialised driver yet: load lazily
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    Device device = 0;
    unsigned flags = 0;
    int active = 0;
    if (d.DeviceGet(&device, ordinal) != kSuccess) continue;
    if (d.PrimaryCtxGetState(device, &flags, &active) != kSuccess || !active) continue;
    Context context = nullptr;
    if (d.PrimaryCtxRetain(&context, device) != kSuccess) continue;
    {
      std::lock_guard<std::mutex> lock(k->mutex);
      bool present = false;
      for (const Loaded& l : k->loaded) present = present || l.context == context;
      if (!present && d.CtxPushCurrent(context) == kSuccess) {
        Loaded made{};
        std::string error = load_into(*k, context, device, &made);
        Context popped = nullptr;
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
