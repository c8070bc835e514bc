"""brainevent: C++ and CUDA kernels, inline or in files, called from jax.jit through XLA FFI."""

from __future__ import annotations

import importlib as _importlib
from typing import TYPE_CHECKING, Any

from . import config  # cheap (no third-party imports); 0.2.1 code uses brainevent.config.*
from ._version import __version__
from .cuda_graphs import apply_default as _apply_cuda_graph_default
from .errors import *  # noqa: F403  (every error class is public under its own name)
from .errors import __all__ as _error_names

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
    from .calls.ffi import ffi_call as ffi_call
    from .cuda_graphs import enable_cuda_graphs as enable_cuda_graphs
    from .cuda_loaders import load_cuda_dir as load_cuda_dir
    from .cuda_loaders import load_cuda_file as load_cuda_file
    from .cuda_loaders import load_cuda_inline as load_cuda_inline
    from .custom_kernel import BenchmarkConfig as BenchmarkConfig
    from .custom_kernel import BenchmarkRecord as BenchmarkRecord
    from .custom_kernel import BenchmarkResult as BenchmarkResult
    from .custom_kernel import KernelEntry as KernelEntry
    from .custom_kernel import XLACustomKernel as XLACustomKernel
    from .custom_kernel import benchmark_function as benchmark_function
    from .custom_kernel import get_all_primitive_names as get_all_primitive_names
    from .custom_kernel import get_primitives_by_tags as get_primitives_by_tags
    from .custom_kernel import get_registry as get_registry
    from .custom_kernel import triton_kernel as triton_kernel
    from .custom_kernel.rules import defjvp as defjvp
    from .custom_kernel.rules import general_batching_rule as general_batching_rule
    from .custom_kernel.warp_types import jaxinfo_to_warpinfo as jaxinfo_to_warpinfo
    from .custom_kernel.warp_types import jaxtype_to_warptype as jaxtype_to_warptype
    from .doctor import print_diagnostics as print_diagnostics
    from .headers import include_dir as include_dir
    from .loaders import load_cpp_dir as load_cpp_dir
    from .loaders import load_cpp_file as load_cpp_file
    from .loaders import load_cpp_inline as load_cpp_inline
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
    from .spec.tokens import normalize_tokens as normalize_tokens

# public name -> the module under brainevent that defines it
_EXPORTS: dict[str, str] = {
    "load_cpp_inline": "loaders",
    "load_cpp_file": "loaders",
    "load_cpp_dir": "loaders",
    "load_cuda_inline": "cuda_loaders",
    "load_cuda_file": "cuda_loaders",
    "load_cuda_dir": "cuda_loaders",
    "include_dir": "headers",
    "enable_cuda_graphs": "cuda_graphs",
    "CompiledModule": "runtime.module",
    "KernelFunction": "runtime.kernel_function",
    "numba_kernel": "numba_bridge",
    "numba_cuda_kernel": "numba_bridge",
    "numba_cuda_callable": "numba_bridge",
    "cuda_kernel": "nvrtc.kernel",
    "XLACustomKernel": "custom_kernel",
    "defjvp": "custom_kernel.rules",
    "general_batching_rule": "custom_kernel.rules",
    "KernelEntry": "custom_kernel",
    "BenchmarkConfig": "custom_kernel",
    "BenchmarkRecord": "custom_kernel",
    "BenchmarkResult": "custom_kernel",
    "benchmark_function": "custom_kernel",
    "get_registry": "custom_kernel",
    "get_primitives_by_tags": "custom_kernel",
    "get_all_primitive_names": "custom_kernel",
    "set_cache_dir": "cache_control",
    "get_cache_dir": "cache_control",
    "clear_cache": "cache_control",
    "register_ffi_target": "runtime.targets",
    "list_registered_targets": "runtime.targets",
    "export_checks": "runtime.targets",
    "deserialize": "runtime.targets",
    "ffi_call": "calls.ffi",
    "print_diagnostics": "doctor",
    "normalize_tokens": "spec.tokens",
    "triton_kernel": "custom_kernel",
    "jaxtype_to_warptype": "custom_kernel.warp_types",
    "jaxinfo_to_warpinfo": "custom_kernel.warp_types",
}


def _load_export(package: str, exports: dict[str, str], namespace: dict[str, Any], name: str) -> Any:
    """The one lazy-export idiom: a package lists ``_EXPORTS = {name: submodule}`` and its
    ``__getattr__`` calls this, which imports the submodule on first use and stores ``name`` in
    ``namespace`` (the package's globals). Where an ``if TYPE_CHECKING:`` block re-exports the
    names, ``__getattr__`` is defined under ``if not TYPE_CHECKING:`` so that a misspelt name is
    an error for type checkers."""
    if name in exports:
        value = namespace[name] = getattr(_importlib.import_module(f"{package}.{exports[name]}"), name)
        return value
    raise AttributeError(f"module {package!r} has no attribute {name!r}")


if not TYPE_CHECKING:  # hidden from type checkers, so that a misspelt name is an error there

    def __getattr__(name: str) -> Any:
        return _load_export(__name__, _EXPORTS, globals(), name)

    def __dir__() -> list[str]:  # tab completion sees the lazy names before their first use
        return sorted({*globals(), *_EXPORTS})


__all__ = ["__version__", "config", *_error_names, *_EXPORTS]
