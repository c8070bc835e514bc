// brainevent/check.h - BE::Error and the BE_CHECK macro.
//
// BE_CHECK(cond) << "message" throws BE::CheckError (a BE::Error); the generated
// entry point catches it and hands it to XLA, so a failed check becomes a Python
// exception instead of an abort. Messages accept strings, characters,
// numbers, pointers and BE::DType (no <sstream>: it is slow to compile).
#pragma once

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "brainevent/dtype.h"

namespace BE {

class Error : public std::runtime_error {
 public:
  Error(const std::string& what, const char* file, int line)
      : std::runtime_error(what), file_(file), line_(line) {}
  const char* file() const noexcept { return file_; }
  int line() const noexcept { return line_; }

 private:
  const char* file_;
  int line_;
};

// What BE_CHECK and BE_CUDA_CHECK throw; catching BE::Error catches both.
class CheckError : public Error {
 public:
  using Error::Error;
};
class CudaError : public Error {
 public:
  using Error::Error;
};

namespace detail {

enum class ErrorKind { Generic, Check, Cuda };

// Collects the streamed message of a failed check.
class ErrorBuilder {
 public:
  ErrorBuilder(const char* file, int line, const char* condition, ErrorKind kind = ErrorKind::Generic)
      : file_(file), line_(line), kind_(kind) {
    text_ = file;
    if (line > 0) {
      text_ += ':';
      text_ += std::to_string(line);
    }
    if (condition != nullptr) {
      text_ += ": check failed: ";
      text_ += condition;
    }
  }

  template <typename T>
  ErrorBuilder& operator<<(const T& value) {
    if (!has_message_) {
      text_ += ": ";
      has_message_ = true;
    }
    append(value);
    return *this;
  }

  [[noreturn]] void raise() const {
    if (kind_ == ErrorKind::Check) throw ::BE::CheckError(text_, file_, line_);
    if (kind_ == ErrorKind::Cuda) throw ::BE::CudaError(text_, file_, line_);
    throw ::BE::Error(text_, file_, line_);
  }

 private:
  void append(const char* s) { text_ += s ? s : "(null)"; }
  void append(const std::string& s) { text_ += s; }
  void append(char c) { text_ += c; }
  void append(bool b) { text_ += b ? "true" : "false"; }
  void append(DType t) { text_ += dtype_name(t); }
  template <typename T>
  void append(const T& value) {
    char buf[64];
    if constexpr (std::is_floating_point_v<T>) {
      std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(value));
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(value));
    } else if constexpr (std::is_integral_v<T>) {
      std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(value));
    } else if constexpr (std::is_enum_v<T>) {
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(value));
    } else if constexpr (std::is_pointer_v<T>) {
      std::snprintf(buf, sizeof buf, "%p", static_cast<const void*>(value));
    } else if constexpr (std::is_convertible_v<const T&, std::string>) {
      text_ += static_cast<std::string>(value);
      return;
    } else {
      static_assert(std::is_arithmetic_v<T>,
                    "BE_CHECK messages accept strings, characters, numbers, pointers and BE::DType");
    }
    text_ += buf;
  }

  std::string text_;
  const char* file_;
  int line_;
  ErrorKind kind_;
  bool has_message_ = false;
};

// `&` binds looser than `<<`, so the whole message is streamed before raise().
struct ErrorRaiser {
  [[noreturn]] void operator&(const ErrorBuilder& builder) const { builder.raise(); }
};

// How the shared decoder (ffi_binding.h) words an exception an entry point let through: a
// BE::Error's message says what failed, anything else is said not to be one of ours.
inline const char* exception_prefix(const std::exception& e) noexcept {
  return dynamic_cast<const ::BE::Error*>(&e) != nullptr ? "" : "uncaught C++ exception: ";
}

template <typename Unused>
[[noreturn]] void raise_tensor_error(const char* what, int64_t a, int64_t b, DType dtype) {
  ErrorBuilder error("BE::Tensor", 0, nullptr);
  const std::string kind = what;
  if (kind == "index") {
    error << "dimension index " << a << " is out of range for a tensor of rank " << b;
  } else if (kind == "size") {
    error << "data_ptr<T>() with sizeof(T)=" << a << " on a tensor of dtype " << dtype;
  } else if (kind == "int") {
    error << "numel_checked_int(): the tensor has " << a << " elements, more than an int holds (" << b
          << "); index it with int64_t";
  } else {
    error << "data_ptr<" << static_cast<DType>(a) << ">() on a tensor of dtype " << dtype;
  }
  error.raise();
}

template <typename Unused>
[[noreturn]] void raise_bounds_error(int64_t index, int64_t numel, const char* file, int line) {
  ErrorBuilder error(file, line, nullptr);
  error << "BE::Tensor::at(" << index << ") is out of bounds for a tensor of " << numel
        << " elements (caught by the debug build's bounds check)";
  error.raise();
}

}  // namespace detail
}  // namespace BE

#if defined(__GNUC__) || defined(__clang__)
#define BE_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define BE_UNLIKELY(x) (x)
#endif

// A `while` (not `if`) keeps a following `else` from binding to the macro.
#define BE_CHECK(cond)                                                                   \
  while (BE_UNLIKELY(!(cond)))                                                           \
  ::BE::detail::ErrorRaiser() & ::BE::detail::ErrorBuilder(__FILE__, __LINE__, #cond,   \
                                                           ::BE::detail::ErrorKind::Check)

// BE_FAIL() << "message": unconditional error.
#define BE_FAIL() ::BE::detail::ErrorRaiser() & ::BE::detail::ErrorBuilder(__FILE__, __LINE__, nullptr)
