"""Which library each named backend needs, checked when the backend is first lowered.

Checked at lowering, not at definition: a library of operators may define a Warp or
Triton backend for every user, and only those who select it need the package.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from ..errors import BackendNotInstalledError


@dataclass(frozen=True)
class Library:
    module: str  # what the backend imports
    package: str  # what to pip install


LIBRARIES: dict[str, Library] = {
    "numba": Library("numba", "numba"),
    "numba_cuda": Library("numba.cuda", "numba-cuda"),
    "warp": Library("warp", "warp-lang"),
    "triton": Library("triton", "triton"),
    "pallas": Library("jax.experimental.pallas", "jax"),
}


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
