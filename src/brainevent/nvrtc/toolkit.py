"""What a compile uses besides libnvrtc: the CUDA runtime headers (and CCCL), and an identity of
the NVRTC release for the cache key. Plain file checks first (wheels, conda, CUDA_HOME,
/usr/local/cuda), cuda-pathfinder's search last, so a cache hit neither loads nor starts NVRTC.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from pathlib import Path

from ..toolchain.environment import variable

# The pip distributions of libnvrtc, in cuda-pathfinder's order (libnvrtc.so.13 first).
NVRTC_DISTRIBUTIONS = ("nvidia-cuda-nvrtc", "nvidia-cuda-nvrtc-cu12")
# Where NVIDIA's wheels put the runtime headers and CCCL, under site-packages.
_CUDART_LAYOUTS = ("nvidia/cu13/include", "nvidia/cuda_runtime/include")
_CCCL_LAYOUTS = ("nvidia/cu13/include/cccl", "nvidia/cuda_cccl/include")


@functools.cache
def site_dirs() -> tuple[str, ...]:
    return tuple(p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and os.path.isdir(p))


@functools.cache
def wheel_version(distribution: str) -> str | None:
    """The installed version of ``distribution``, from its ``.dist-info`` directory's name
    (a directory listing: importing importlib.metadata costs more than a whole cache hit)."""
    prefix = distribution.replace("-", "_").lower() + "-"
    for directory in site_dirs():
        with contextlib.suppress(OSError):
            for entry in os.listdir(directory):
                if entry.lower().startswith(prefix) and entry.endswith(".dist-info"):
                    return entry[len(prefix) : -len(".dist-info")]
    return None


@functools.cache
def nvrtc_identity() -> str:
    """``"nvidia-cuda-nvrtc==13.5.37"`` when a wheel provides libnvrtc (cuda-pathfinder
    prefers it); otherwise the loaded library's path and version."""
    found = [f"{name}=={v}" for name in NVRTC_DISTRIBUTIONS if (v := wheel_version(name))]
    if found:
        return ";".join(found)
    from .library import nvrtc

    bound = nvrtc()
    return f"{bound.path}:{bound.version[0]}.{bound.version[1]}"


def _find(candidates: list[Path], header: str, name: str) -> str | None:
    """The first candidate holding ``header``, else cuda-pathfinder's header directory ``name``."""
    found: object = next((c for c in candidates if (c / header).is_file()), None)
    if found is None:
        with contextlib.suppress(Exception):  # not supported by this cuda-pathfinder, or not found
            from cuda.pathfinder import find_nvidia_header_directory

            found = find_nvidia_header_directory(name)
    return str(found) if found else None


def _roots() -> list[Path]:
    """Toolkit roots named by the environment, in cuda-pathfinder's order, then the usual one."""
    conda = variable("CONDA_PREFIX")
    roots = [Path(conda) / "targets" / "x86_64-linux", Path(conda)] if conda else []
    roots += [Path(value) for v in ("CUDA_PATH", "CUDA_HOME") if (value := variable(v))]
    return [*roots, Path("/usr/local/cuda")]


@functools.cache
def runtime_include_dirs() -> tuple[str, ...]:
    """Directories holding ``cuda_runtime.h``, ``cuda_fp16.h`` and friends, then CCCL's
    (``<nv/target>``, which CUDA 13's ``cuda_fp16.h`` needs); empty when none is found (kernels
    that include nothing from the toolkit still compile)."""
    wheels = [Path(d) / layout for d in site_dirs() for layout in _CUDART_LAYOUTS]
    roots = [r / "include" for r in _roots()]
    cudart = _find([*wheels, *roots], "cuda_runtime.h", "cudart")
    cccl_dirs = [Path(d) / layout for d in site_dirs() for layout in _CCCL_LAYOUTS]
    if cudart:
        cccl_dirs += [Path(cudart) / "cccl", Path(cudart)]
    cccl = _find(cccl_dirs, "nv/target", "cccl")
    return tuple(dict.fromkeys(d for d in (cudart, cccl) if d))
