"""Which library each named backend needs, checked when it is first lowered (an operator library
may define a Warp backend for everyone; only those who select it need Warp), and where it can run,
checked at definition (a Triton backend on the CPU is a mistake on every machine); the versions
of installed distributions."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from .errors import BackendNotInstalledError


@dataclass(frozen=True)
class Library:
    module: str  # what the backend imports
    package: str  # what to pip install
    platforms: tuple[str, ...]  # where its kernels can run


LIBRARIES: dict[str, Library] = {
    "numba": Library("numba", "numba", ("cpu",)),
    "numba_cuda": Library("numba.cuda", "numba-cuda", ("gpu",)),
    "warp": Library("warp", "warp-lang", ("cpu", "gpu")),
    "triton": Library("triton", "triton", ("gpu",)),
    # On the CPU through Pallas's interpreter (pallas_call(..., interpret=True)).
    "pallas": Library("jax.experimental.pallas", "jax", ("cpu", "gpu", "tpu")),
    # CUDA source compiled with NVRTC (def_cuda_kernel); libnvrtc is found when it is lowered.
    "nvrtc": Library("cuda.pathfinder", "nvidia-cuda-nvrtc", ("gpu",)),
}


def installed_version(dist: str) -> str | None:
    """The version of the installed distribution ``dist`` (``"jax"``, ``"numba-cuda"``), or None."""
    from importlib import metadata  # costs ~30 ms: only when asked

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package is missing or broken
        return False


def require_library(backend: str) -> None:
    """Raises :class:`BackendNotInstalledError` when ``backend`` needs a missing library."""
    library = LIBRARIES.get(backend)
    if library is None or _importable(library.module):
        return
    raise BackendNotInstalledError(
        f"the {backend!r} backend needs the Python module {library.module!r}, which is not installed: "
        f"pip install {library.package} (or choose another backend with backend='<name>')",
        backend=backend,
        module=library.module,
        package=library.package,
    )


def check_platform(backend: str, platform: str) -> None:
    """ValueError when ``backend`` names a library whose kernels cannot run on ``platform``."""
    library = LIBRARIES.get(backend)
    if library is None or platform in library.platforms:
        return
    raise ValueError(
        f"the {backend!r} backend runs on {' and '.join(repr(p) for p in library.platforms)}, not on "
        f"{platform!r}: define it for {library.platforms[0]!r}, or give a kernel for {platform!r} another "
        "backend name"
    )
