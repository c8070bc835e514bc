"""Triton kernels as JAX functions, launched by the cubin launcher (Triton imported only when used)."""

from __future__ import annotations

from .triton_call import triton_kernel

__all__ = ["triton_kernel"]
