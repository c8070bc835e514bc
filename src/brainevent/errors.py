"""The error hierarchy.

Every error names the bad value, what was expected and how to fix it, and carries its data
as typed keyword-only attributes (annotations that type checkers read as a dataclass's
fields). ``.data`` holds the fields given; every error pickles (BaseException's ``__reduce__``
keeps the message and the attributes). Extra keyword data is still accepted at run time
(re-raises with ``**exc.data``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, dataclass_transform


def _positional(*, kw_only: bool = False) -> Any:
    """Marks the message as the one positional field (read by type checkers only)."""
    return None


@dataclass_transform(kw_only_default=True, eq_default=False, field_specifiers=(_positional,))
class _Fields(Exception):
    """Keeps ``message`` and the keyword fields; type checkers see a dataclass-like ``__init__``."""

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.data = data
        for key, value in data.items():
            setattr(self, key, value)

    def __str__(self) -> str:
        return self.message


class BrainEventError(_Fields):
    """Base class of every error raised by brainevent."""

    message: str = _positional(kw_only=False)


def _rebuild(cls: type[BrainEventError], message: str, data: dict[str, Any]) -> BrainEventError:
    """An error of ``cls`` as unpickling makes one: a subclass's own ``__init__`` never runs."""
    err = cls.__new__(cls)
    _Fields.__init__(err, message, **data)
    return err


# The names brainevent 0.2.1 gave its kernel-toolchain errors. Each error below derives from the
# one 0.2.1 raised in the same situation, so an ``except`` clause written for 0.2.1 catches ours.


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

    target: str | None = None
    module: str | None = None
    platform: str | None = None
    reason: str | None = None


class KernelExecutionError(KernelError):
    """A compiled kernel failed while it ran."""


class CUDANotInstalledError(KernelError):
    """A CUDA operation was requested but no CUDA stack is installed."""


class SpecError(KernelError, ValueError):
    """An arg_spec, a ``// @BE`` annotation or a C++ signature is malformed or inconsistent."""

    function: object = None  # the bad name itself when it is not a string
    token: object = None
    tokens: Sequence[str] | None = None
    position: int | None = None
    parameter: str | None = None
    parameters: Sequence[str] | None = None
    attribute: str | None = None
    cxx_type: str | None = None
    dtype: str | None = None
    file: str | None = None
    files: Sequence[str] | None = None
    line: int | None = None
    lines: Sequence[int] | None = None
    column: int | None = None
    expected: int | None = None
    got: int | None = None
    index: int | None = None
    value: object = None
    source_type: type | None = None
    sources_type: str | None = None
    functions_type: str | None = None


class ToolchainError(KernelToolchainError, RuntimeError):
    """A compiler, header or library could not be found or is unusable."""

    compiler: str | None = None
    command: str | Sequence[str] = ""
    nvcc_version: tuple[int, ...] | None = None
    variable: str | None = None
    value: object = None


class NvccNotFoundError(ToolchainError):
    """No usable nvcc was found (``candidates`` lists what was tried)."""

    path: str | None = None
    found_via: str | None = None
    candidates: tuple[tuple[str, str, str], ...] | None = None  # (path, found_via, note) each
    cuda12_wheels_only: bool | None = None


class NvidiaLibraryNotFoundError(ToolchainError):
    """An NVIDIA library named in ``extra_libraries`` (or its headers) was not found."""

    library: str | None = None


class HostCompilerNotFoundError(ToolchainError):
    """No usable host C++ compiler was found."""

    searched: tuple[str, ...] | None = None


class HeaderNotFoundError(ToolchainError):
    """A header the build needs (the XLA FFI headers) is missing."""


class GpuArchDetectionError(ToolchainError):
    """No GPU architecture could be determined to build for."""

    reason: str | None = None


class UnsupportedArchError(ToolchainError):
    """The nvcc in use cannot build for a requested GPU architecture."""

    archs: tuple[str, ...] | None = None


class CompileError(KernelCompilationError, RuntimeError):
    """The compiler rejected the sources; ``log_path`` holds the full log (0.2.1 fields kept)."""

    stage: ClassVar[str] = "compile"
    command: str | Sequence[str] = ""
    module: str | None = None
    log: str | None = None
    log_path: str | None = None
    first_error: str | None = None
    timed_out: bool | None = None
    timeout_s: float | None = None
    kernel: str | None = None
    backend: str | None = None
    platform: str | None = None

    @property
    def compiler_output(self) -> str:
        """The build log (0.2.1's name for it), read from ``log_path`` when not kept inline."""
        if isinstance(self.log, str) or not self.log_path:
            return self.log or ""
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as handle:
                return handle.read()
        except OSError:
            return ""


# 0.2.1's concrete compile error; ours is CompileError under its other name.
CompilationError = CompileError


class HostCompilerIncompatibleError(CompileError, ToolchainError):
    """The host compiler's version is outside what this nvcc accepts."""

    kind: str | None = None
    version: int | None = None
    max_supported: int | None = None


class CacheError(KernelError, RuntimeError):
    """The kernel cache cannot be used (permissions, space, a lock that never frees)."""

    path: str | None = None
    lock_path: str | None = None
    holder: str | None = None
    module: str | None = None
    disk_full: bool | None = None  # True: the disk (or quota) holding the cache is full


class LoadError(KernelLoadError, RuntimeError):
    """A compiled artifact could not be loaded."""

    path: str | None = None
    entry: str | None = None


class RegistrationError(KernelRegistrationError, RuntimeError):
    """An FFI target could not be registered with JAX."""

    target: str | None = None
    targets: Sequence[str] | None = None
    function: str | None = None
    module: str | None = None
    platform: object = None  # the bad platform itself when it is not a string
    registered_by: str | Sequence[str] | None = None


class KernelTypeError(KernelError, TypeError, AssertionError):
    """The object given as a kernel is not of the kind expected (0.2.1 raised either base)."""

    kernel: str | None = None


class KernelCallError(KernelError, ValueError):
    """A call to a compiled function got operands or attributes it cannot take."""

    kernel: str | None = None
    target: str | None = None
    function: str | None = None
    backend: str | None = None
    platform: str | None = None
    attribute: str | None = None
    attributes: Sequence[str] | None = None
    parameter: str | None = None
    dtype: str | None = None
    result: int | None = None
    grid: str | None = None
    value: object = None
    type: str | None = None


class ArchError(ToolchainError, KernelCallError):
    """A value (an argument, or ``variable``'s setting) names no GPU architecture."""


class UnhashableAttributeError(KernelCallError, TypeError):
    """An ``XLACustomKernel`` attribute value is unhashable (JAX's trace cache key needs it)."""


class KernelFallbackExhaustedError(KernelCallError):
    """No backend gave a kernel for the platform; ``tried`` lists ``(backend, reason)`` pairs."""

    tried: list[tuple[str, str]] | None = None


class BackendNotInstalledError(KernelNotAvailableError, ImportError):
    """A kernel backend needs a library that is not installed; ``package`` is what to install."""

    backend: str | None = None
    package: str | None = None  # ``module`` (inherited) names what failed to import


# Every error class, under each of its names (CompilationError too).
__all__ = sorted(n for n, v in globals().items() if isinstance(v, type) and issubclass(v, BrainEventError))
