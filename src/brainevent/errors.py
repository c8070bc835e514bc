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


class SpecError(BrainEventError, ValueError):
    """An arg_spec, a ``// @BE`` annotation or a C++ signature is malformed or inconsistent."""


class ToolchainError(BrainEventError, RuntimeError):
    """A compiler, header or library could not be found or is unusable."""


class CompileError(BrainEventError, RuntimeError):
    """The compiler rejected the sources. ``log_path`` holds the full log."""


class CacheError(BrainEventError, RuntimeError):
    """The kernel cache cannot be used (permissions, space, a lock that never frees)."""


class LoadError(BrainEventError, RuntimeError):
    """A compiled artifact could not be loaded."""


class RegistrationError(BrainEventError, RuntimeError):
    """An FFI target could not be registered with JAX."""


class KernelCallError(BrainEventError, ValueError):
    """A call to a compiled function got operands or attributes it cannot take."""


class UnhashableAttributeError(KernelCallError, TypeError):
    """An ``XLACustomKernel`` call got an attribute value JAX cannot use as a primitive
    parameter (parameters are part of JAX's trace cache key, so they must be hashable)."""


class KernelFallbackExhaustedError(KernelCallError):
    """No backend of an ``XLACustomKernel`` gave a kernel for the platform being compiled for.

    ``tried`` lists ``(backend, reason)`` pairs in the order they were tried; it is empty
    when the platform has no kernel at all, or the requested backend is not defined.
    """


class BackendNotInstalledError(BrainEventError, ImportError):
    """A kernel backend (Warp, Triton, Pallas, Numba) needs a library that is not installed;
    ``package`` is what to ``pip install``."""


__all__ = [
    "BackendNotInstalledError",
    "BrainEventError",
    "CacheError",
    "CompileError",
    "KernelCallError",
    "KernelFallbackExhaustedError",
    "LoadError",
    "RegistrationError",
    "SpecError",
    "ToolchainError",
    "UnhashableAttributeError",
]
