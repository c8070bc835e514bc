"""A shim for numba-cuda 0.30 on NumPy >= 2.5, which removed ``np.row_stack``.

numba-cuda registers an overload for ``np.row_stack`` while it loads its typing registries
(at the first kernel compile) and fails with AttributeError on NumPy 2.5. ``row_stack`` was
a deprecated alias of ``vstack``, so restoring the alias (only when missing) is exact.
"""

from __future__ import annotations

import numpy as np


def ensure_numba_cuda_numpy_compat() -> None:
    if not hasattr(np, "row_stack"):
        setattr(np, "row_stack", np.vstack)  # noqa: B010 (mypy knows row_stack on older NumPy only)
