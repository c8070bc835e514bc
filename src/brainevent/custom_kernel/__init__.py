"""``XLACustomKernel``: a named JAX primitive with per-platform kernels and its own rules."""

from __future__ import annotations

from .primitive import XLACustomKernel

__all__ = ["XLACustomKernel"]
