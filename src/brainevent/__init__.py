"""brainevent: C++ and CUDA kernels, inline or in files, called from jax.jit through XLA FFI."""

from __future__ import annotations

from typing import Any

from . import config  # cheap (no third-party imports); 0.2.1 code uses brainevent.config.*
from ._version import __version__
from .cuda_graphs import apply_default as _apply_cuda_graph_default
from .errors import (
    BackendNotInstalledError,
    BrainEventError,
    CacheError,
    CompilationError,
    CompileError,
    CUDANotInstalledError,
    GpuArchDetectionError,
    HeaderNotFoundError,
    HostCompilerIncompatibleError,
    HostCompilerNotFoundError,
    KernelCallError,
    KernelCompilationError,
    KernelError,
    KernelExecutionError,
    KernelFallbackExhaustedError,
    KernelLoadError,
    KernelNotAvailableError,
    KernelRegistrationError,
    KernelToolchainError,
    KernelTypeError,
    LoadError,
    NvccNotFoundError,
    RegistrationError,
    SpecError,
    ToolchainError,
    UnsupportedArchError,
)

# Before JAX starts its backend: let custom calls in small graphs run as CUDA graphs
# (cuda_graphs.py; BRAINEVENT_CUDA_GRAPHS=0 turns it off). Costs no import.
_apply_cuda_graph_default()

# Loaders are imported on first use so that `import brainevent` stays cheap.
_LAZY: dict[str, tuple[str, str | None]] = {
    "config": ("config", None),  # the module itself
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
    "defjvp": ("custom_kernel.jax_rules", "defjvp"),
    "general_batching_rule": ("custom_kernel.jax_rules", "general_batching_rule"),
    "KernelEntry": ("custom_kernel", "KernelEntry"),
    "BenchmarkConfig": ("custom_kernel", "BenchmarkConfig"),
    "BenchmarkRecord": ("custom_kernel", "BenchmarkRecord"),
    "BenchmarkResult": ("custom_kernel", "BenchmarkResult"),
    "benchmark_function": ("custom_kernel", "benchmark_function"),
    "get_registry": ("custom_kernel", "get_registry"),
    "get_primitives_by_tags": ("custom_kernel", "get_primitives_by_tags"),
    "get_all_primitive_names": ("custom_kernel", "get_all_primitive_names"),
    "set_cache_dir": ("cache_control", "set_cache_dir"),
    "get_cache_dir": ("cache_control", "get_cache_dir"),
    "clear_cache": ("cache_control", "clear_cache"),
    "register_ffi_target": ("runtime.targets", "register_ffi_target"),
    "list_registered_targets": ("runtime.targets", "list_registered_targets"),
    "print_diagnostics": ("doctor", "print_diagnostics"),
    "normalize_tokens": ("spec.normalize", "normalize_tokens"),
    "triton_kernel": ("custom_kernel", "triton_kernel"),
    "jaxtype_to_warptype": ("custom_kernel.warp_types", "jaxtype_to_warptype"),
    "jaxinfo_to_warpinfo": ("custom_kernel.warp_types", "jaxinfo_to_warpinfo"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module_name, attr = _LAZY[name]
        module = importlib.import_module(f".{module_name}", __name__)
        value = module if attr is None else getattr(module, attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'brainevent' has no attribute {name!r}")


__all__ = [
    "BackendNotInstalledError",
    "BenchmarkConfig",
    "BenchmarkRecord",
    "BenchmarkResult",
    "BrainEventError",
    "CUDANotInstalledError",
    "CacheError",
    "CompilationError",
    "CompileError",
    "CompiledModule",
    "GpuArchDetectionError",
    "HeaderNotFoundError",
    "HostCompilerIncompatibleError",
    "HostCompilerNotFoundError",
    "KernelCallError",
    "KernelCompilationError",
    "KernelEntry",
    "KernelError",
    "KernelExecutionError",
    "KernelFallbackExhaustedError",
    "KernelFunction",
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
    "UnsupportedArchError",
    "XLACustomKernel",
    "__version__",
    "benchmark_function",
    "clear_cache",
    "config",
    "defjvp",
    "enable_cuda_graphs",
    "general_batching_rule",
    "get_all_primitive_names",
    "get_cache_dir",
    "get_primitives_by_tags",
    "get_registry",
    "include_dir",
    "jaxinfo_to_warpinfo",
    "jaxtype_to_warptype",
    "list_registered_targets",
    "load_cpp_file",
    "load_cpp_inline",
    "load_cuda_dir",
    "load_cuda_file",
    "load_cuda_inline",
    "normalize_tokens",
    "numba_cuda_callable",
    "numba_cuda_kernel",
    "numba_kernel",
    "print_diagnostics",
    "register_ffi_target",
    "set_cache_dir",
    "triton_kernel",
]
