"""Telling an inline CUDA string from a path to a file holding one."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import KernelCallError

_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".cuda")


def read_source(source_or_path: str | os.PathLike[str]) -> tuple[str, str | None]:
    """``(text, path)``: a ``Path``, or a one-line string naming a file, is read (``path`` is
    its absolute path); any other string is the source itself (``path`` None)."""
    if isinstance(source_or_path, os.PathLike):
        candidate: str | None = os.fspath(source_or_path)
    elif isinstance(source_or_path, str):
        one_line = "\n" not in source_or_path and "__global__" not in source_or_path
        candidate = source_or_path.strip() if one_line else None
    else:
        raise KernelCallError(
            f"source_or_path must be CUDA source text or a path to a .cu file, got "
            f"{type(source_or_path).__name__}",
            type=type(source_or_path).__name__,
        )
    if candidate is None:
        return str(source_or_path), None
    path = Path(candidate).expanduser()
    if not path.is_file():
        looks_like_path = isinstance(source_or_path, os.PathLike) or candidate.endswith(_SUFFIXES)
        hint = "no such file" if looks_like_path else "neither a file nor CUDA source (no __global__ kernel)"
        raise KernelCallError(
            f"source_or_path {candidate!r}: {hint}. Pass the kernel's source text, or the path of a .cu file",
            value=candidate,
        )
    return path.read_text(), str(path.resolve())
