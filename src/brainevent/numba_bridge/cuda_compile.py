"""Compiling a Numba-CUDA kernel for a call's signature: cubins for the GPUs, or PTX anywhere."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..calls.operands import Signature

_ENTRY = re.compile(r"\.entry\s+([A-Za-z_$][\w$]*)\s*\(")


@dataclass(frozen=True)
class CompiledKernel:
    entry: str
    images: dict[int, bytes]  # compute capability as major*10+minor -> cubin
    cooperative: bool
    # What the images are made from (PTX per architecture, linked files): the same kernel
    # gives the same text in every process, where cubins differ with Numba's name counters.
    source: tuple[str, ...] = ()


def ensure_numba_cuda_numpy_compat() -> None:
    """numba-cuda 0.30 registers an overload of ``np.row_stack``, which NumPy 2.5 removed: it
    was a deprecated alias of ``vstack``, so restoring it (only when missing) is exact."""
    if not hasattr(np, "row_stack"):
        setattr(np, "row_stack", np.vstack)  # noqa: B010 (mypy knows row_stack on older NumPy only)


def numba_types(signature: Signature) -> tuple[Any, ...]:
    """Numba array types for the operands: C-contiguous, since XLA buffers are dense row-major."""
    import numba
    from numba import types

    out = []
    for operand in signature.operands:
        try:
            dtype = numba.from_dtype(operand.dtype)
        except Exception as exc:  # e.g. bfloat16, which Numba has no type for
            raise TypeError(f"Numba has no type for dtype {operand.dtype}: {exc}") from exc
        out.append(types.Array(dtype, operand.ndim, "C"))
    return tuple(out)


def compile_for_devices(kernel: Any, signature: Signature) -> CompiledKernel:
    """Compiles through the dispatcher (its options, linked files and cache apply): one cubin
    per distinct compute capability among the visible GPUs."""
    from numba import cuda

    from ..toolchain.cuda_arch import visible_archs

    argtypes = numba_types(signature)
    capabilities = [(a.major, a.minor) for a in visible_archs()]
    try:
        if not capabilities:
            raise cuda.CudaSupportError("the CUDA driver reports no GPU")
        compiled = kernel.compile(argtypes)
    except cuda.CudaSupportError as exc:
        raise RuntimeError(f"numba_cuda_kernel needs a CUDA GPU visible to Numba: {exc}") from exc
    library = compiled._codelibrary  # numba-cuda's CUDACodeLibrary: links cubins per arch
    cubins = {major * 10 + minor: library.get_cubin(cc=(major, minor)) for major, minor in capabilities}
    # Older numba-cuda returns bytes; newer ones a cuda.core ObjectCode holding them in .code.
    images = {cc: bytes(getattr(image, "code", image)) for cc, image in cubins.items()}
    source = (
        *(str(library.get_asm_str(cc=cc)) for cc in capabilities),
        repr(sorted(map(str, getattr(library, "_linking_files", ())))),
    )
    return CompiledKernel(compiled.entry_name, images, bool(getattr(compiled, "cooperative", False)), source)


def compile_ptx(kernel: Any, signature: Signature, cc: tuple[int, int] = (9, 0)) -> tuple[str, str]:
    """(PTX, entry name) for the kernel; needs NVVM but no GPU."""
    from numba import cuda

    ensure_numba_cuda_numpy_compat()

    options = getattr(kernel, "targetoptions", {}) or {}
    ptx, _ = cuda.compile_ptx(
        kernel.py_func,
        numba_types(signature),
        cc=cc,
        fastmath=bool(options.get("fastmath", False)),
        lineinfo=bool(options.get("lineinfo", False)),
    )
    found = _ENTRY.search(ptx)
    if found is None:
        raise RuntimeError("Numba produced PTX without a kernel entry")
    return ptx, found.group(1)
