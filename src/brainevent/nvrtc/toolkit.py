"""Where libnvrtc and the CUDA runtime headers (and CCCL) are: file checks first (wheels, conda,
CUDA_HOME, /usr/local/cuda), then cuda-pathfinder's header search, remembered in the toolchain memo."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import NamedTuple

from ..environment import shortcut_environment, variable
from ..errors import ToolchainError
from ..fileio import file_stamps

# libnvrtc, newest first: in NVIDIA's wheels, and elsewhere, the system's directories too (this
# process never loads NVRTC, so cuda-pathfinder's way, asking the loader, is not ours).
_WHEEL_NVRTC = ("nvidia/cu13/lib/libnvrtc.so.13", "nvidia/cuda_nvrtc/lib/libnvrtc.so.12")
_NVRTC = ("libnvrtc.so.13", "libnvrtc.so.12")
_SYSTEM_DIRS = (
    "/usr/local/cuda/lib64",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
)
# Where NVIDIA's wheels put the runtime headers and CCCL, under site-packages.
_CUDART_LAYOUTS = ("nvidia/cu13/include", "nvidia/cuda_runtime/include")
_CCCL_LAYOUTS = ("nvidia/cu13/include/cccl", "nvidia/cuda_cccl/include")


@functools.cache
def site_dirs() -> tuple[str, ...]:
    return tuple(p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and os.path.isdir(p))


class Located(NamedTuple):
    path: str  # libnvrtc, as found
    found_via: str  # cuda-pathfinder's words: "site-packages", "conda", "CUDA_HOME", "system-search"


def locate_nvrtc() -> Located:
    """libnvrtc in NVIDIA's wheels, ``$CONDA_PREFIX``, ``$CUDA_PATH``/``$CUDA_HOME``, then
    ``$LD_LIBRARY_PATH`` and the system's library directories; ToolchainError if nowhere."""
    places = [("site-packages", d, _WHEEL_NVRTC) for d in site_dirs()]
    roots = [("conda", variable("CONDA_PREFIX"), "lib")]
    roots += [("CUDA_HOME", variable(v), sub) for v in ("CUDA_PATH", "CUDA_HOME") for sub in ("lib64", "lib")]
    places += [(via, os.path.join(root, sub), _NVRTC) for via, root, sub in roots if root]
    system = [*(variable("LD_LIBRARY_PATH") or "").split(os.pathsep), *_SYSTEM_DIRS]
    places += [("system-search", d, _NVRTC) for d in system if d]
    for via, directory, names in places:
        for name in names:
            if os.path.isfile(path := os.path.join(directory, name)):
                return Located(path, via)
    raise ToolchainError(
        "cannot find libnvrtc, which brainevent.cuda_kernel compiles with: install NVIDIA's wheel "
        "(`pip install nvidia-cuda-nvrtc` for CUDA 13, `pip install nvidia-cuda-nvrtc-cu12` for CUDA 12; "
        "jax[cuda12] and jax[cuda13] already bring it) or point CUDA_HOME at a CUDA toolkit. Searched: "
        + ", ".join(dict.fromkeys(directory for _, directory, _ in places)),
        compiler="nvrtc",
    )


def _find(candidates: list[Path], header: str, name: str) -> str | None:
    """The first candidate holding ``header``, else cuda-pathfinder's header directory ``name``
    (its search imports ~0.1 s of code: asked once per environment, the answer remembered)."""
    found = next((str(c) for c in candidates if (c / header).is_file()), None)
    if found is None:
        from ..toolchain.memo import remembered

        context = repr((name, shortcut_environment(), file_stamps(list(site_dirs()))))
        found = remembered("nvrtc-headers", context, lambda: _ask_pathfinder(name), fresh=_gone_or_a_dir)
    return found or None


def _gone_or_a_dir(found: str) -> bool:
    return not found or os.path.isdir(found)


def _ask_pathfinder(name: str) -> str:
    try:
        from cuda.pathfinder import find_nvidia_header_directory

        return str(find_nvidia_header_directory(name) or "")
    except Exception:  # not supported by this cuda-pathfinder, or not found
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
