// brainevent/scratch.h - BE::Scratch, workspace memory XLA allocates for one call.
//
// A parameter of type BE::Scratch (arg_spec token `scratch`) receives a buffer from XLA's
// own allocator, sized by the caller (`scratch:<bytes>` in the spec, or scratch_bytes= on
// the call). XLA allocates it as an extra result of the custom call that the call sugar
// discards, so it is device memory on a GPU, host memory on the CPU, and its address is
// fixed inside a captured CUDA graph. Its contents are undefined on entry.
#pragma once

#include <cstddef>
#include <cstdint>

#include "brainevent/check.h"

#if defined(__CUDACC__)
#define BE_SCRATCH_HD __host__ __device__
#else
#define BE_SCRATCH_HD
#endif

namespace BE {

class Scratch {
 public:
  Scratch() = default;
  BE_SCRATCH_HD Scratch(void* data, std::size_t size_bytes) : data_(data), size_(size_bytes) {}

  BE_SCRATCH_HD void* data() const noexcept { return data_; }
  BE_SCRATCH_HD std::size_t size_bytes() const noexcept { return size_; }

  // `count` elements of T starting `offset_bytes` into the buffer. Throws BE::CheckError when
  // they do not fit or are misaligned for T, so a too-small scratch_bytes is a Python error.
  template <typename T>
  T* as(std::size_t count, std::size_t offset_bytes = 0) const {
    if (offset_bytes > size_ || count > (size_ - offset_bytes) / sizeof(T)) {
      ::BE::detail::ErrorRaiser() & fail() << "as<T>(" << count << ", " << offset_bytes << ") needs "
                                           << offset_bytes + count * sizeof(T) << " bytes (sizeof(T)=" << sizeof(T)
                                           << ") but the scratch holds " << size_
                                           << "; pass a larger scratch_bytes= (or scratch:<bytes> in the arg_spec)";
    }
    const auto address = reinterpret_cast<std::uintptr_t>(data_) + offset_bytes;
    if (address % alignof(T) != 0) {
      ::BE::detail::ErrorRaiser() & fail() << "as<T>(" << count << ", " << offset_bytes
                                           << "): the address is not a multiple of alignof(T)=" << alignof(T)
                                           << "; use an offset that is";
    }
    return reinterpret_cast<T*>(address);
  }

 private:
  // `ErrorRaiser() & fail() << ...` streams the whole message, then throws BE::CheckError (check.h).
  static ::BE::detail::ErrorBuilder fail() {
    return ::BE::detail::ErrorBuilder("BE::Scratch", 0, nullptr, ::BE::detail::ErrorKind::Check);
  }

  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace BE
