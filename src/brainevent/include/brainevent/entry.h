// brainevent/entry.h - support for the C trampolines brainevent appends to a
// kernel's translation unit. Internal.
//
// A trampoline unpacks tensors and attribute values and calls the user's entry point,
// nothing more: the shared decoder that calls it (ffi_binding.h, linked into the same
// library) turns every C++ exception into a message, so nothing thrown by user code can
// cross into XLA (where it would terminate the process). Keeping the try/catch out of the
// user's unit keeps nvcc's passes over it short.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "brainevent/dtype.h"
#if BE_CHECK_HEADERS
#include "brainevent/scratch.h"
#endif
#include "brainevent/tensor.h"

#define BE_ENTRY extern "C" __attribute__((visibility("hidden")))

namespace BE {
namespace detail {

// Attribute values arrive as bytes already converted to the parameter's type.
template <typename T>
std::remove_cv_t<std::remove_reference_t<T>> load_attr(void* p) noexcept {
  std::remove_cv_t<std::remove_reference_t<T>> value;
  std::memcpy(static_cast<void*>(&value), p, sizeof(value));
  return value;
}

// The stream handle as the parameter's own type: an integer (int64_t, size_t, ...)
// or a pointer such as cudaStream_t / void*.
template <typename T>
std::remove_cv_t<std::remove_reference_t<T>> stream_as(int64_t stream) noexcept {
  using U = std::remove_cv_t<std::remove_reference_t<T>>;
  if constexpr (std::is_pointer_v<U>) {
    return reinterpret_cast<U>(stream);
  } else {
    return static_cast<U>(stream);
  }
}

// A scratch buffer reaches the trampoline as a tensor (an XLA result buffer); the entry
// point sees its bytes.
#if BE_CHECK_HEADERS
inline ::BE::Scratch scratch_of(const ::BE::Tensor& t) noexcept { return ::BE::Scratch(t.data(), t.nbytes()); }
#endif

}  // namespace detail
}  // namespace BE
