// brainevent/entry.h - support for the C trampolines brainevent appends to a
// kernel's translation unit. Internal.
//
// A trampoline unpacks tensors and attribute values, calls the user's entry
// point and turns every C++ exception into a message, so nothing thrown by
// user code can cross into XLA (where it would terminate the process).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <type_traits>

#include "brainevent/dtype.h"
#if BE_CHECK_HEADERS
#include "brainevent/check.h"
#include "brainevent/scratch.h"
#endif
#include "brainevent/tensor.h"

#define BE_ENTRY extern "C" __attribute__((visibility("hidden")))

namespace BE {
namespace detail {

inline void copy_message(char* out, std::size_t cap, const char* prefix, const char* text) {
  if (cap == 0) return;
  std::size_t used = 0;
  for (const char* part : {prefix, text}) {
    for (const char* c = part; *c != '\0' && used + 1 < cap; ++c) out[used++] = *c;
  }
  out[used] = '\0';
}

// "" for a BE::Error (its message says what failed), else a prefix saying the exception is
// not one of ours. Defined in check.h; a unit built without it (BE_CHECK_HEADERS=0) calls
// the shared decoder's instance, as for the tensor checks' raise_tensor_error.
template <typename Unused>
const char* exception_prefix(const std::exception& e) noexcept;

// One message buffer per thread (and per shared object): only failures touch it.
inline thread_local char entry_error[2048];

template <typename Fn>
const char* guarded_call(Fn&& fn) noexcept {
  try {
    fn();
    return nullptr;
  } catch (const std::exception& e) {
    copy_message(entry_error, sizeof entry_error, exception_prefix<void>(e), e.what());
  } catch (...) {
    copy_message(entry_error, sizeof entry_error, "uncaught C++ exception of unknown type", "");
  }
  return entry_error;
}

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
