"""``numba_cuda_kernel``: a Numba-CUDA kernel as a JAX function, compiled for a call's signature into
cubins for the GPUs, launched by the cubin launcher (built by the host compiler: no nvcc, no CUDA runtime)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..calls.batching import check_vmap_method
from ..calls.bridge import BridgedFunction, Made, Preparer, memoized, on_signature, stable_text
from ..calls.ffi import flatten_outs, is_spec
from ..calls.operands import Signature
from ..errors import KernelTypeError
from ..launchers.launch_config import LaunchConfig, resolve_launch


def require_numba_cuda() -> Any:
    """Numba-CUDA's kernel type (``CUDADispatcher``), or an ImportError saying what to install."""
    ensure_numba_cuda_numpy_compat()
    try:
        from numba.cuda.dispatcher import CUDADispatcher
    except ImportError as exc:
        raise ImportError(
            "numba_cuda_kernel needs Numba with CUDA support: pip install numba numba-cuda "
            f"(import failed: {exc})"
        ) from exc
    return CUDADispatcher


def cuda_dispatcher(kernel: Any, what: str = "kernel") -> Any:
    """``kernel`` if it is a ``@numba.cuda.jit`` kernel, else a KernelTypeError."""
    if not isinstance(kernel, require_numba_cuda()):
        raise KernelTypeError(
            f"{what} must be a @numba.cuda.jit kernel (CUDADispatcher), got {type(kernel).__name__}",
            kernel=type(kernel).__name__,
        )
    return kernel


def array_params(signature: Signature) -> list[Any]:
    """The cubin launcher's parameters for Numba-CUDA's array layout: per array meminfo, parent,
    nitems, itemsize, data, shape[ndim] and strides[ndim] in bytes, every field 8 bytes wide
    (numba-cuda's ``_Kernel._prepare_args``); extents and strides come from the call's buffers."""
    from ..launchers.cubin import EXTENT, NULL, OPERAND, STRIDE, Param, scalar

    params = []
    for i, operand in enumerate(signature.operands):
        itemsize = operand.itemsize
        params += [Param(NULL), Param(NULL), Param(EXTENT, i, -1), scalar(itemsize.to_bytes(8, "little"))]
        params += [Param(OPERAND, i, itemsize), *(Param(EXTENT, i, d) for d in range(operand.ndim))]
        params += [Param(STRIDE, i, d) for d in range(operand.ndim)]
    return params


def preparer(kernel: Any, config: LaunchConfig) -> Preparer:
    def make(signature: Signature) -> Made:
        from ..launchers.cubin import Image, prepare_launch

        entry, cubins, cooperative, source = compile_for_devices(kernel, signature)
        images = {cc: Image(code, config.shared_mem) for cc, code in cubins.items()}
        target, kernel_id = prepare_launch(
            "numba-cuda", entry, config.grid, config.block, array_params(signature),
            len(signature.operands), images, cooperative=cooperative,
            content=(stable_text(entry), *(stable_text(text) for text in source)),
        )  # fmt: skip
        return target, kernel_id, (kernel,)

    return memoized(("numba-cuda", id(kernel), config), make)


def numba_cuda_kernel(
    kernel: Any,
    outs: Any,
    *,
    grid: int | tuple[int, ...] | None = None,
    block: int | tuple[int, ...] | None = None,
    launch_dims: int | tuple[int, ...] | None = None,
    threads_per_block: int = 256,
    shared_mem: int = 0,
    vmap_method: str | None = None,
    input_output_aliases: dict[int, int] | None = None,
    zeros: Any = None,
) -> Callable[..., Any]:
    """Create a JAX-callable function from a single Numba CUDA kernel.

    The kernel receives the inputs, then one array per leaf of ``outs`` to write. It is
    compiled per signature and GPU architecture at trace time and launched from compiled
    code with ``cuLaunchKernel`` on XLA's stream: no Python runs per call, and the launch
    can be captured in a CUDA graph.

    Args:
        kernel: A ``@numba.cuda.jit`` kernel (a ``CUDADispatcher``).
        outs: A ``jax.ShapeDtypeStruct`` or a pytree of them; results come back in that shape.
        grid: Grid dimensions (1-3); needs ``block``. Excludes ``launch_dims``.
        block: Block dimensions (1-3); needs ``grid``.
        launch_dims: Total threads (1-3 dims); grid and block are derived from
            ``threads_per_block`` (2-D blocks are 32 x n, 3-D 32 x n x m).
        threads_per_block: Threads per block with ``launch_dims`` (default 256).
        shared_mem: Dynamic shared memory in bytes.
        vmap_method: How ``jax.vmap`` runs it: ``"sequential"``, ``"expand_dims"`` or
            ``"broadcast_all"`` launch the kernel once per batch element with its unbatched
            ranks (the last two need ``launch_dims``); ``None`` cannot be vmapped.
        input_output_aliases: ``{input index: output index}`` for in-place updates.
        zeros: Results cleared to zero before the kernel runs, for one that accumulates (XLA hands
            them over uncleared): ``True`` (all), an index into ``outs``' leaves, or a list of them.

    Checks run in brainevent 0.2.1's order (launch configuration, ``vmap_method``, ``outs``,
    then the kernel). A launch with nothing to do (``launch_dims=0``, a zero grid, or only
    empty outputs) does not run the kernel and returns zeros.

    Raises:
        ImportError: Numba with CUDA support is not installed.
        ValueError: Neither or both of ``(grid, block)`` and ``launch_dims``, a batching
            ``vmap_method`` with an explicit grid, bad values, or a bfloat16 output; when
            called, a 0-d or bfloat16 input.
        KernelTypeError: ``kernel`` is not a ``numba.cuda.dispatcher.CUDADispatcher`` (both
            a ``TypeError`` and an ``AssertionError``).
    """
    config = resolve_launch(
        grid, block, launch_dims, threads_per_block, shared_mem, vmap_method=vmap_method, allow_empty=True
    )
    check_vmap_method(vmap_method)
    name = getattr(kernel, "__name__", "numba_cuda_kernel")
    specs, _ = flatten_outs(outs, name)
    _refuse_bfloat16([s.dtype for s in specs], "output")
    cuda_dispatcher(kernel)
    prepare = on_signature(preparer(kernel, config), launch=not config.empty)
    # No launcher_for: a batching vmap launches the kernel once per batch element.
    return BridgedFunction(
        prepare, outs, vmap_method, input_output_aliases, name, check_args=_check_inputs, zeros=zeros
    )


def _refuse_bfloat16(dtypes: list[Any], what: str) -> None:
    for i, dtype in enumerate(dtypes):
        if np.dtype(dtype).name == "bfloat16":
            raise ValueError(
                f"numba_cuda_kernel: {what} {i} is bfloat16, which Numba-CUDA cannot compile "
                "kernels for; use float16 or float32 (and cast with .astype)."
            )


def _check_inputs(args: tuple[Any, ...]) -> None:
    for i, arg in enumerate(args):
        if is_spec(arg) and np.ndim(arg) == 0:
            raise ValueError(
                f"numba_cuda_kernel: input {i} is a 0-d array (a scalar); Numba-CUDA kernels "
                "take arrays of rank 1 or more: pass jnp.atleast_1d(x) (or jnp.array([value]))."
            )
    _refuse_bfloat16([a.dtype for a in args if is_spec(a)], "input")


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


def compile_for_devices(
    kernel: Any, signature: Signature
) -> tuple[str, dict[int, bytes], bool, tuple[str, ...]]:
    """``(entry, {major*10+minor: cubin}, cooperative, source)``, through the dispatcher (its options,
    linked files and cache apply): one cubin per distinct compute capability among the visible GPUs.
    ``source`` is what the cubins are made from (PTX per architecture, linked files): the same in
    every process, where cubins differ with Numba's name counters."""
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
    return compiled.entry_name, images, bool(getattr(compiled, "cooperative", False)), source
