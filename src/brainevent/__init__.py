"""brainevent: C++ and CUDA kernels, inline or in files, called from jax.jit through XLA FFI."""

from __future__ import annotations

from typing import Any

from ._version import __version__
from .errors import (
    BrainEventError,
    CacheError,
    CompileError,
    KernelCallError,
    LoadError,
    RegistrationError,
    SpecError,
    ToolchainError,
)

# Loaders are imported on first use so that `import brainevent` stays cheap.
_LAZY = {
    "load_cpp_inline": ("loaders", "load_cpp_inline"),
    "load_cpp_file": ("loaders", "load_cpp_file"),
    "load_cuda_inline": ("cuda_loaders", "load_cuda_inline"),
    "load_cuda_file": ("cuda_loaders", "load_cuda_file"),
    "load_cuda_dir": ("cuda_loaders", "load_cuda_dir"),
    "include_dir": ("headers", "include_dir"),
    "enable_cuda_graphs": ("cuda_graphs", "enable_cuda_graphs"),
    "CompiledModule": ("runtime.module", "CompiledModule"),
    "KernelFunction": ("runtime.module", "KernelFunction"),
    "numba_kernel": ("numba_bridge", "numba_kernel"),
    "numba_cuda_kernel": ("numba_bridge", "numba_cuda_kernel"),
    "numba_cuda_callable": ("numba_bridge", "numba_cuda_callable"),
    "XLACustomKernel": ("custom_kernel", "XLACustomKernel"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module_name, attr = _LAZY[name]
        value = getattr(importlib.import_module(f".{module_name}", __name__), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'brainevent' has no attribute {name!r}")


__all__ = [
    "BrainEventError",
    "CacheError",
    "CompileError",
    "CompiledModule",
    "KernelCallError",
    "KernelFunction",
    "LoadError",
    "RegistrationError",
    "SpecError",
    "ToolchainError",
    "XLACustomKernel",
    "__version__",
    "enable_cuda_graphs",
    "include_dir",
    "load_cpp_file",
    "load_cpp_inline",
    "load_cuda_dir",
    "load_cuda_file",
    "load_cuda_inline",
    "numba_cuda_callable",
    "numba_cuda_kernel",
    "numba_kernel",
]
