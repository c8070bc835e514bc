"""``XLACustomKernel``: a named JAX primitive with named backends per platform and its own rules."""

from __future__ import annotations

from .benchmark import BenchmarkConfig as BenchmarkConfig
from .benchmark import BenchmarkRecord as BenchmarkRecord
from .benchmark import BenchmarkResult as BenchmarkResult
from .benchmark import benchmark_function as benchmark_function
from .kernels import KernelEntry as KernelEntry
from .primitive import XLACustomKernel as XLACustomKernel
from .primitive import get_all_primitive_names as get_all_primitive_names
from .primitive import get_primitives_by_tags as get_primitives_by_tags
from .primitive import get_registry as get_registry
