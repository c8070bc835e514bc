"""The error hierarchy.

Every error names the bad value, what was expected and how to fix it, and carries
its data as attributes so that callers (and tests) need not parse messages. All of
them pickle: ``__reduce__`` rebuilds them from their keyword data.
"""

from __future__ import annotations

from typing import Any


class BrainEventError(Exception):
    """Base class of every error raised by brainevent."""

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.data = data
        for key, value in data.items():
            setattr(self, key, value)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.message, self.data))

    def __str__(self) -> str:
        return self.message


def _rebuild(cls: type[BrainEventError], message: str, data: dict[str, Any]) -> BrainEventError:
    err = cls.__new__(cls)
    BrainEventError.__init__(err, message, **data)
    return err


# The names brainevent 0.2.1 gave its kernel-toolchain errors. Each error below derives from
# the one 0.2.1 raised in the same situation, so an ``except`` clause written for 0.2.1 catches
# ours. (KernelFallbackExhaustedError and BenchmarkDataFnNotProvidedError belong to
# XLACustomKernel and live with it.)


class KernelError(BrainEventError):
    """Base class of the errors of compiling, loading, registering and calling kernels."""


class KernelToolchainError(KernelError):
    """A compiler, header or GPU query the build needs is missing or unusable."""


class KernelCompilationError(KernelError):
    """A kernel failed to compile."""


class KernelLoadError(KernelError):
    """A compiled kernel library could not be loaded."""


class KernelRegistrationError(KernelError):
    """A kernel could not be registered as a JAX FFI target."""


class KernelNotAvailableError(KernelError):
    """A requested kernel backend is not installed or not usable here."""


class KernelExecutionError(KernelError):
    """A compiled kernel failed while it ran."""


class CUDANotInstalledError(KernelError):
    """A CUDA operation was requested but no CUDA stack is installed."""


class SpecError(KernelError, ValueError):
    """An arg_spec, a ``// @BE`` annotation or a C++ signature is malformed or inconsistent."""


class ToolchainError(KernelToolchainError, RuntimeError):
    """A compiler, header or library could not be found or is unusable."""


class NvccNotFoundError(ToolchainError):
    """No usable nvcc was found (``candidates`` lists what was tried)."""


class HostCompilerNotFoundError(ToolchainError):
    """No usable host C++ compiler was found."""


class HeaderNotFoundError(ToolchainError):
    """A header the build needs (the XLA FFI headers) is missing."""


class GpuArchDetectionError(ToolchainError):
    """No GPU architecture could be determined to build for."""


class UnsupportedArchError(ToolchainError):
    """The nvcc in use cannot build for a requested GPU architecture."""


class CompileError(KernelCompilationError, RuntimeError):
    """The compiler rejected the sources. ``log_path`` holds the full log.

    ``compiler_output``, ``command`` and ``stage`` are there for code written for 0.2.1's
    ``CompilationError``: the build log, the failing command when known, and "compile".
    """

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes the error's data did not set.
        if name == "compiler_output":
            return _read_log(self.__dict__.get("log"), self.__dict__.get("log_path"))
        if name == "command":
            return ""
        if name == "stage":
            return "compile"
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


def _read_log(log: Any, log_path: Any) -> str:
    if isinstance(log, str):
        return log
    if log_path:
        try:
            with open(log_path, encoding="utf-8", errors="replace") as handle:
                return handle.read()
        except OSError:
            return ""
    return ""


# 0.2.1's concrete compile error; ours is CompileError under its other name.
CompilationError = CompileError


class HostCompilerIncompatibleError(CompileError, ToolchainError):
    """The host compiler's version is outside what this nvcc accepts."""


class CacheError(KernelError, RuntimeError):
    """The kernel cache cannot be used (permissions, space, a lock that never frees)."""


class LoadError(KernelLoadError, RuntimeError):
    """A compiled artifact could not be loaded."""


class RegistrationError(KernelRegistrationError, RuntimeError):
    """An FFI target could not be registered with JAX."""


class KernelTypeError(KernelError, TypeError, AssertionError):
    """The object given as a kernel is not one of the kind expected.

    A ``TypeError`` (what 0.2.1 raised) and an ``AssertionError`` (what its documentation
    names), so either ``except`` clause catches it.
    """


class KernelCallError(KernelError, ValueError):
    """A call to a compiled function got operands or attributes it cannot take."""


class UnhashableAttributeError(KernelCallError, TypeError):
    """An ``XLACustomKernel`` call got an attribute value JAX cannot use as a primitive
    parameter (parameters are part of JAX's trace cache key, so they must be hashable)."""


class KernelFallbackExhaustedError(KernelCallError):
    """No backend of an ``XLACustomKernel`` gave a kernel for the platform being compiled for.

    ``tried`` lists ``(backend, reason)`` pairs in the order they were tried; it is empty
    when the platform has no kernel at all, or the requested backend is not defined.
    """


class BackendNotInstalledError(KernelNotAvailableError, ImportError):
    """A kernel backend (Warp, Triton, Pallas, Numba) needs a library that is not installed;
    ``package`` is what to ``pip install``."""


__all__ = [
    "BackendNotInstalledError",
    "BrainEventError",
    "CUDANotInstalledError",
    "CacheError",
    "CompilationError",
    "CompileError",
    "GpuArchDetectionError",
    "HeaderNotFoundError",
    "HostCompilerIncompatibleError",
    "HostCompilerNotFoundError",
    "KernelCallError",
    "KernelCompilationError",
    "KernelError",
    "KernelExecutionError",
    "KernelFallbackExhaustedError",
    "KernelLoadError",
    "KernelNotAvailableError",
    "KernelRegistrationError",
    "KernelToolchainError",
    "KernelTypeError",
    "LoadError",
    "NvccNotFoundError",
    "RegistrationError",
    "SpecError",
    "ToolchainError",
    "UnhashableAttributeError",
    "UnsupportedArchError",
]
