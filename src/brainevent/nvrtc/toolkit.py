"""What a compile uses besides libnvrtc: the CUDA runtime headers (and CCCL when present),
and an identity of the NVRTC release that a cache key can hold without loading it.

Both are resolved once per process. Nothing here loads libnvrtc when NVIDIA's wheel is
installed, so a cache hit never pays NVRTC's start-up.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

# The pip distributions of libnvrtc, in cuda-pathfinder's order (libnvrtc.so.13 first).
NVRTC_DISTRIBUTIONS = ("nvidia-cuda-nvrtc", "nvidia-cuda-nvrtc-cu12")


@functools.cache
def nvrtc_identity() -> str:
    """``"nvidia-cuda-nvrtc==13.5.37"`` when a wheel provides libnvrtc (cuda-pathfinder
    prefers it); otherwise the loaded library's path and version."""
    from importlib import metadata

    found = []
    for name in NVRTC_DISTRIBUTIONS:
        try:
            found.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    if found:
        return ";".join(found)
    from .library import nvrtc

    bound = nvrtc()
    return f"{bound.path}:{bound.version[0]}.{bound.version[1]}"


def _pathfinder_dir(name: str) -> str | None:
    try:
        from cuda.pathfinder import find_nvidia_header_directory

        found = find_nvidia_header_directory(name)
    except Exception:  # not supported by this cuda-pathfinder, or not found
        return None
    return str(found) if found else None


def _cuda_home_include() -> str | None:
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        home = os.environ.get(variable)
        if home and (Path(home) / "include" / "cuda_runtime.h").is_file():
            return str(Path(home) / "include")
    return None


@functools.cache
def runtime_include_dirs() -> tuple[str, ...]:
    """Directories holding ``cuda_runtime.h``, ``cuda_fp16.h`` and friends, then CCCL's
    (``<nv/target>``, which CUDA 13's ``cuda_fp16.h`` needs); empty when none is found (kernels
    that include nothing still compile)."""
    dirs: list[str] = []
    cudart = _pathfinder_dir("cudart") or _cuda_home_include()
    if cudart:
        dirs.append(cudart)
    cccl = _pathfinder_dir("cccl")
    if cccl is None and cudart and (Path(cudart) / "cccl").is_dir():
        cccl = str(Path(cudart) / "cccl")
    if cccl and cccl not in dirs:
        dirs.append(cccl)
    return tuple(dirs)
