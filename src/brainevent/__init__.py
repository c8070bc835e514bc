"""brainevent: C++ and CUDA kernels, inline or in files, called from jax.jit through XLA FFI."""

from __future__ import annotations

import importlib as _importlib
from typing import TYPE_CHECKING, Any

from . import config  # cheap (no third-party imports); 0.2.1 code uses brainevent.config.*
from ._version import __version__
from .cuda_graphs import apply_default as _apply_cuda_graph_default
from .errors import *  # noqa: F403  (every error class is public under its own name)
from .errors import __all__ as _error_names
from .lazy_exports import load_export as _load_export

# Before JAX starts its backend: let custom calls in small graphs run as CUDA graphs
# (cuda_graphs.py; BRAINEVENT_CUDA_GRAPHS=0 turns it off). Costs no import.
_apply_cuda_graph_default()

# Everything else is imported on first use (module __getattr__ below), so that
# `import brainevent` stays cheap. Type checkers and IDEs read the real objects from this
# block instead; tests/api/test_public_api.py keeps it and _EXPORTS listing the same names.
if TYPE_CHECKING:
    from .cache_control import clear_cache as clear_cache
    from .cache_control import get_cache_dir as get_cache_dir
    from .cache_control import set_cache_dir as set_cache_dir
    from .calls.autodiff import differentiable as differentiable
    from .calls.ffi import ffi_call as ffi_call
    from .cuda_graphs import enable_cuda_graphs as enable_cuda_graphs
    from .custom_kernel import BenchmarkConfig as BenchmarkConfig
    from .custom_kernel import BenchmarkRecord as BenchmarkRecord
    from .custom_kernel import BenchmarkResult as BenchmarkResult
    from .custom_kernel import KernelEntry as KernelEntry
    from .custom_kernel import XLACustomKernel as XLACustomKernel
    from .custom_kernel import benchmark_function as benchmark_function
    from .custom_kernel import get_all_primitive_names as get_all_primitive_names
    from .custom_kernel import get_primitives_by_tags as get_primitives_by_tags
    from .custom_kernel import get_registry as get_registry
    from .custom_kernel.rules import defjvp as defjvp
    from .custom_kernel.rules import general_batching_rule as general_batching_rule
    from .custom_kernel.warp_types import jaxinfo_to_warpinfo as jaxinfo_to_warpinfo
    from .custom_kernel.warp_types import jaxtype_to_warptype as jaxtype_to_warptype
    from .doctor import print_diagnostics as print_diagnostics
    from .headers import include_dir as include_dir
    from .loaders import load_cpp_dir as load_cpp_dir
    from .loaders import load_cpp_file as load_cpp_file
    from .loaders import load_cpp_inline as load_cpp_inline
    from .loaders import load_cuda_dir as load_cuda_dir
    from .loaders import load_cuda_file as load_cuda_file
    from .loaders import load_cuda_inline as load_cuda_inline
    from .numba_bridge import numba_cuda_callable as numba_cuda_callable
    from .numba_bridge import numba_cuda_kernel as numba_cuda_kernel
    from .numba_bridge import numba_kernel as numba_kernel
    from .nvrtc.kernel import cuda_kernel as cuda_kernel
    from .runtime.kernel_function import KernelFunction as KernelFunction
    from .runtime.module import CompiledModule as CompiledModule
    from .runtime.targets import deserialize as deserialize
    from .runtime.targets import export_checks as export_checks
    from .runtime.targets import list_registered_targets as list_registered_targets
    from .runtime.targets import register_ffi_target as register_ffi_target
    from .spec.declarations import normalize_tokens as normalize_tokens
    from .triton_bridge import triton_kernel as triton_kernel

# public name -> the module under brainevent that defines it
_EXPORTS: dict[str, str] = {
    name: module
    for module, names in (
        ("loaders", "load_cpp_inline load_cpp_file load_cpp_dir"),
        ("loaders", "load_cuda_inline load_cuda_file load_cuda_dir"),
        ("headers", "include_dir"),
        ("cuda_graphs", "enable_cuda_graphs"),
        ("runtime.module", "CompiledModule"),
        ("runtime.kernel_function", "KernelFunction"),
        ("numba_bridge", "numba_kernel numba_cuda_kernel numba_cuda_callable"),
        ("nvrtc.kernel", "cuda_kernel"),
        ("custom_kernel", "XLACustomKernel KernelEntry BenchmarkConfig BenchmarkRecord BenchmarkResult"),
        ("custom_kernel", "benchmark_function get_registry get_primitives_by_tags get_all_primitive_names"),
        ("custom_kernel.rules", "defjvp general_batching_rule"),
        ("cache_control", "set_cache_dir get_cache_dir clear_cache"),
        ("runtime.targets", "register_ffi_target list_registered_targets export_checks deserialize"),
        ("calls.ffi", "ffi_call"),
        ("calls.autodiff", "differentiable"),
        ("doctor", "print_diagnostics"),
        ("spec.declarations", "normalize_tokens"),
        ("triton_bridge", "triton_kernel"),
        ("custom_kernel.warp_types", "jaxtype_to_warptype jaxinfo_to_warpinfo"),
    )
    for name in names.split()
}


# Subpackages reachable as attributes (``brainevent.nvrtc.compile``), imported on first use.
_SUBPACKAGES = ("nvrtc",)

if not TYPE_CHECKING:  # hidden from type checkers, so that a misspelt name is an error there

    def __getattr__(name: str) -> Any:
        if name in _SUBPACKAGES:
            return _importlib.import_module(f"{__name__}.{name}")
        return _load_export(__name__, _EXPORTS, globals(), name)

    def __dir__() -> list[str]:  # tab completion sees the lazy names before their first use
        return sorted({*globals(), *_EXPORTS})


__all__ = ["__version__", "config", *_error_names, *_EXPORTS]
