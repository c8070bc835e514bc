"""What a compile uses besides NVRTC's own code: where libnvrtc is, and the CUDA runtime headers
(and CCCL). Plain file checks first (wheels, conda, CUDA_HOME, /usr/local/cuda); cuda-pathfinder's
header search, which costs more, is remembered in the toolchain memo, so a cache hit neither
loads nor starts NVRTC.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from pathlib import Path
from typing import NamedTuple

from ..fileio import file_stamps
from ..toolchain.environment import shortcut_environment, variable

# libnvrtc in NVIDIA's wheels, under site-packages, in cuda-pathfinder's order (CUDA 13 first).
_NVRTC_LAYOUTS = ("nvidia/cu13/lib/libnvrtc.so.13", "nvidia/cuda_nvrtc/lib/libnvrtc.so.12")
_NVRTC_FILES = ("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so")
# Where NVIDIA's wheels put the runtime headers and CCCL, under site-packages.
_CUDART_LAYOUTS = ("nvidia/cu13/include", "nvidia/cuda_runtime/include")
_CCCL_LAYOUTS = ("nvidia/cu13/include/cccl", "nvidia/cuda_cccl/include")


@functools.cache
def site_dirs() -> tuple[str, ...]:
    return tuple(p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and os.path.isdir(p))


class Located(NamedTuple):
    """Where libnvrtc is (empty: where the system's loader finds it by soname) and how it was found."""

    path: str
    found_via: str  # cuda-pathfinder's words: "site-packages", "conda", "CUDA_HOME", "system-search"


def locate_nvrtc() -> Located:
    """libnvrtc by file checks alone, in cuda-pathfinder's order: NVIDIA's wheels,
    ``$CONDA_PREFIX``, ``$CUDA_PATH`` and ``$CUDA_HOME``; else the system's loader."""
    for directory in site_dirs():
        for layout in _NVRTC_LAYOUTS:
            if os.path.isfile(path := os.path.join(directory, layout)):
                return Located(path, "site-packages")
    roots: list[tuple[str, str | None, tuple[str, ...]]] = [("conda", variable("CONDA_PREFIX"), ("lib",))]
    roots += [("CUDA_HOME", variable(name), ("lib64", "lib")) for name in ("CUDA_PATH", "CUDA_HOME")]
    for via, root, subdirs in roots:
        for subdir in subdirs if root else ():
            for name in _NVRTC_FILES:
                if os.path.isfile(path := os.path.join(str(root), subdir, name)):
                    return Located(path, via)
    return Located("", "system-search")


def _find(candidates: list[Path], header: str, name: str) -> str | None:
    """The first candidate holding ``header``, else cuda-pathfinder's header directory ``name``."""
    found = next((str(c) for c in candidates if (c / header).is_file()), None)
    if found is None:  # cuda-pathfinder's search imports ~0.1 s of code: asked once per environment
        from ..toolchain.memo import remembered

        context = repr((name, shortcut_environment(), file_stamps(list(site_dirs()))))
        found = (
            remembered("nvrtc-headers", context, lambda: _ask_pathfinder(name), fresh=_no_or_a_dir) or None
        )
    return found


def _no_or_a_dir(found: str) -> bool:
    return not found or os.path.isdir(found)


def _ask_pathfinder(name: str) -> str:
    with contextlib.suppress(Exception):  # not supported by this cuda-pathfinder, or not found
        from cuda.pathfinder import find_nvidia_header_directory

        return str(find_nvidia_header_directory(name) or "")
    return ""


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
