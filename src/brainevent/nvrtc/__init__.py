"""CUDA kernels compiled with NVRTC: no nvcc, no host code. ``brainevent.cuda_kernel`` (:mod:`.kernel`)
is the JAX-facing API; :func:`compile` is the compiler with the disk cache, usable on its own."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .compiler import Compiled, parse_arch

if TYPE_CHECKING:
    from .kernel import cuda_kernel as cuda_kernel


def compile(
    source_or_path: str | os.PathLike[str],
    name_expressions: Sequence[str] | str,
    arch: Any,
    *,
    options: Sequence[str] = (),
    include_dirs: Sequence[str | os.PathLike[str]] = (),
    build_directory: str | None = None,
) -> Compiled:
    """Compile CUDA device code with NVRTC, through the disk cache.

    Args:
        source_or_path: The source text, or the path of a ``.cu`` file.
        name_expressions: The kernels to keep, as C++ name expressions (``"add"``,
            ``"axpy<float>"``); :attr:`Compiled.lowered` maps each to its symbol.
        arch: ``"sm_90"`` (or ``90``, ``"9.0"``) for a cubin; ``"compute_90"`` for PTX.
        options: Further NVRTC options (``"-DBLOCK=128"``, ``"--use_fast_math"``).
        include_dirs: Directories searched for ``#include``; the headers found there are part
            of the cache key.
        build_directory: The cache root (default: brainevent's cache directory).

    Raises:
        CompileError: NVRTC rejected the source; the message quotes the offending line.
        ToolchainError: libnvrtc cannot be found.
    """
    from .cache import Request, compile_cached
    from .source import KernelSource

    names = (name_expressions,) if isinstance(name_expressions, str) else tuple(name_expressions)
    request = Request(KernelSource.read(source_or_path, options, include_dirs), names, parse_arch(arch))
    return compile_cached(request, build_directory=build_directory)[0]


_EXPORTS = {"cuda_kernel": "kernel"}  # loads Warp/JAX glue: on first use

if not TYPE_CHECKING:  # hidden from type checkers, so that a misspelt name is an error there

    def __getattr__(name: str) -> Any:
        from ..lazy_exports import load_export

        return load_export(__name__, _EXPORTS, globals(), name)


__all__ = ["Compiled", "compile", "cuda_kernel", "parse_arch"]
