"""axpy (out = a * x + y) from kernels built into this package by `brainevent build --into`."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jax

import brainevent

KERNELS = Path(__file__).parent / "kernels"


@cache
def _module(platform: str) -> Any:
    if platform == "gpu":
        return brainevent.load_cuda_file(KERNELS / "axpy.cu")
    return brainevent.load_cpp_file(KERNELS / "axpy.cpp")


def axpy(a: float, x: jax.Array, y: jax.Array) -> jax.Array:
    """a * x + y on the platform of ``x`` (float32 arrays of one shape)."""
    platform = next(iter(x.devices())).platform if isinstance(x, jax.Array) else jax.default_backend()
    return _module("gpu" if platform == "gpu" else "cpu").axpy(x, y, a=a)
