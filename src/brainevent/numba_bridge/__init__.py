"""Numba (CPU) and Numba-CUDA (GPU) kernels as JAX functions (Numba imported only when used)."""

from __future__ import annotations

from .cpu_kernel import numba_kernel
from .cuda_callable import numba_cuda_callable
from .gpu_kernel import numba_cuda_kernel

__all__ = ["numba_cuda_callable", "numba_cuda_kernel", "numba_kernel"]
