// brainevent/tensor.h - BE::Tensor, a non-owning view of an XLA buffer.
//
// XLA hands kernels dense row-major buffers, so strides are derived from the
// shape; they are measured in elements, like NumPy's strides divided by itemsize.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

#include "brainevent/dtype.h"

namespace BE {
namespace detail {
// Defined in check.h. A template, so this header stays free of <string> and
// friends: the generated binding includes it and never calls a checked method, and a unit
// built with BE_CHECK_HEADERS=0 calls the instance the shared decoder holds (ffi_binding.h).
template <typename Unused = void>
[[noreturn]] void raise_tensor_error(const char* what, int64_t a, int64_t b, DType dtype);
template <typename Unused = void>
[[noreturn]] void raise_bounds_error(int64_t index, int64_t numel, const char* file, int line);
}  // namespace detail

// Debug builds (the loaders' debug=True, or BRAINEVENT_DEBUG=1) define BE_DEBUG=1: at<T>()
// then checks every index and dtype, and the build carries -g at -O0.
#ifndef BE_DEBUG
#define BE_DEBUG 0
#endif

class Tensor {
 public:
  Tensor() = default;
  Tensor(void* data, DType dtype, int64_t ndim, const int64_t* shape, const int64_t* strides)
      : data_(data), dtype_(dtype), ndim_(ndim), shape_(shape), strides_(strides) {}

  void* data_ptr() const noexcept { return data_; }
  void* data() const noexcept { return data_; }

  // Typed access; a dtype mismatch throws instead of reinterpreting memory.
  template <typename T>
  T* data_ptr() const {
    check_element_type<T>();
    return static_cast<T*>(data_);
  }
  template <typename T>
  T* data() const { return data_ptr<T>(); }

  // The element at flat (row-major) index i. In a debug build an index outside [0, numel())
  // or a T that does not match the dtype throws BE::Error naming the caller's file and line
  // (a Python error, not a corrupted heap); otherwise this is a plain, unchecked access.
  template <typename T>
  T& at(int64_t i, const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
#if BE_DEBUG
    check_element_type<T>();
    const int64_t n = numel();
    if (i < 0 || i >= n) detail::raise_bounds_error<>(i, n, file, line);
#else
    (void)file;
    (void)line;
#endif
    return static_cast<T*>(data_)[i];
  }

  int64_t ndim() const noexcept { return ndim_; }
  int64_t dim() const noexcept { return ndim_; }
  // Negative indices count from the end, as in Python.
  int64_t size(int64_t i) const { return shape_[wrap(i)]; }
  int64_t shape(int64_t i) const { return shape_[wrap(i)]; }
  int64_t stride(int64_t i) const { return strides_[wrap(i)]; }
  const int64_t* shape_ptr() const noexcept { return shape_; }
  const int64_t* strides_ptr() const noexcept { return strides_; }

  DType dtype() const noexcept { return dtype_; }
  std::size_t element_size() const noexcept { return ::BE::element_size(dtype_); }
  int64_t numel() const noexcept {
    int64_t n = 1;
    for (int64_t i = 0; i < ndim_; ++i) n *= shape_[i];
    return n;
  }
  // numel() as an int, for launch arithmetic that uses int; throws BE::Error when it does not fit.
  int numel_checked_int() const {
    const int64_t n = numel();
    if (n > INT_MAX) detail::raise_tensor_error<>("int", n, INT_MAX, dtype_);
    return static_cast<int>(n);
  }
  std::size_t nbytes() const noexcept { return static_cast<std::size_t>(numel()) * element_size(); }
  bool is_contiguous() const noexcept { return true; }

 private:
  int64_t wrap(int64_t i) const {
    const int64_t j = i < 0 ? i + ndim_ : i;
    if (j < 0 || j >= ndim_) detail::raise_tensor_error<>("index", i, ndim_, dtype_);
    return j;
  }

  template <typename T>
  void check_element_type() const {
    constexpr DType expected = dtype_of<T>();
    if constexpr (expected == DType::Invalid) {
      // Types without a DType mapping (e.g. __half) are checked by size only.
      if (sizeof(T) != element_size())
        detail::raise_tensor_error<>("size", static_cast<int64_t>(sizeof(T)), 0, dtype_);
    } else {
      if (expected != dtype_) detail::raise_tensor_error<>("dtype", static_cast<int64_t>(expected), 0, dtype_);
    }
  }

  void* data_ = nullptr;
  DType dtype_ = DType::Invalid;
  int64_t ndim_ = 0;
  const int64_t* shape_ = nullptr;
  const int64_t* strides_ = nullptr;
};

}  // namespace BE
