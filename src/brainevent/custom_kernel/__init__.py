"""``XLACustomKernel``: a named JAX primitive with named backends per platform and its own rules."""

from __future__ import annotations

from .benchmark import BenchmarkConfig, BenchmarkRecord, BenchmarkResult, benchmark_function
from .kernels import KernelEntry
from .primitive import (
    XLACustomKernel,
    get_all_primitive_names,
    get_primitives_by_tags,
    get_registry,
    register_primitive,
)

__all__ = [
    "BenchmarkConfig",
    "BenchmarkRecord",
    "BenchmarkResult",
    "KernelEntry",
    "XLACustomKernel",
    "benchmark_function",
    "get_all_primitive_names",
    "get_primitives_by_tags",
    "get_registry",
    "register_primitive",
]
