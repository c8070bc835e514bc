"""``brainevent.cuda_kernel``: a ``__global__`` CUDA kernel, compiled with NVRTC, as a JAX function,
launched like ``numba_cuda_kernel`` from compiled code on XLA's stream."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..calls.batching import RANK_CHANGING
from ..errors import KernelCallError
from ..launchers.launch_config import LaunchConfig, is_int, resolve_launch
from .compiler import parse_arch
from .source import KernelSource

# The CUDA C++ spelling of each dtype (NVRTC has no <cstdint> without the toolkit's headers).
_C_TYPES = {
    "bool": "bool", "int8": "signed char", "uint8": "unsigned char", "int16": "short",
    "uint16": "unsigned short", "int32": "int", "uint32": "unsigned int", "int64": "long long",
    "uint64": "unsigned long long", "float16": "__half", "bfloat16": "__nv_bfloat16",
    "float32": "float", "float64": "double",
}  # fmt: skip


# A debug build: device debug information (-G: no device optimisation) and line information.
DEBUG_OPTIONS = ("-G", "-lineinfo")


def ctype(dtype: Any) -> str:
    """The CUDA C++ type of a dtype, for name expressions: ``f"axpy<{ctype(x.dtype)}>"``."""
    name = np.dtype(dtype).name
    if name not in _C_TYPES:
        raise KernelCallError(f"no CUDA C++ type for dtype {name}; supported: {sorted(_C_TYPES)}", dtype=name)
    return _C_TYPES[name]


def parse_archs(compute_capability: Any) -> tuple[str, ...] | None:
    """``("sm_80", "sm_90")`` from one value or a list; None to compile for the visible GPUs."""
    if compute_capability is None:
        return None
    values = compute_capability if isinstance(compute_capability, (list, tuple)) else [compute_capability]
    archs = [parse_arch(v) for v in values]
    ptx = [a for a in archs if not a.startswith("sm_")]
    if ptx:
        raise KernelCallError(
            f"cuda_kernel launches cubins: compute_capability takes real architectures such as 'sm_90', "
            f"got {ptx} (brainevent.nvrtc.compile gives PTX)",
            value=repr(compute_capability),
        )
    return tuple(sorted(set(archs)))


def resolve_config(*launch: Any, vmap_method: str | None) -> LaunchConfig:
    """``resolve_launch(grid, block, launch_dims, threads_per_block, shared_mem)``, as our typed error."""
    try:
        return resolve_launch(*launch, vmap_method=vmap_method, allow_empty=True)
    except ValueError as exc:
        raise KernelCallError(f"cuda_kernel: {exc}", grid=repr(launch[:3])) from None


@dataclass(frozen=True)
class KernelDef:
    """A kernel as ``cuda_kernel`` and ``def_cuda_kernel`` define it. ``name`` and each
    ``launch`` and scalar value may be a callable of the call's abstract operands."""

    source: KernelSource
    name: str | Callable[..., str]
    launch: tuple[Any, Any, Any, Any, Any]  # grid, block, launch_dims, threads_per_block, shared_mem
    archs: tuple[str, ...] | None
    scalars: dict[str, Any]

    @classmethod
    def checked(
        cls,
        caller: str,
        source_or_path: Any,
        name: Any,
        launch: tuple[Any, Any, Any, Any, Any],
        compute_capability: Any,
        options: Sequence[str],
        include_dirs: Sequence[Any],
        scalars: dict[str, Any],
        vmap_method: str | None = None,
        all_scalars: bool = False,
        debug: bool | None = None,
    ) -> KernelDef:
        """What can be checked before a call: a fixed launch, the name, and, with ``all_scalars`` (no
        call adds any), that a fixed name binds them all. ``debug`` (None: ``BRAINEVENT_DEBUG``)."""
        if not any(callable(v) for v in launch):
            resolve_config(*launch, vmap_method=vmap_method)  # fail early on a fixed configuration
        elif vmap_method in RANK_CHANGING and launch[:2] != (None, None):  # needs launch_dims, not a grid
            resolve_config(*launch[:2], None, *launch[3:], vmap_method=vmap_method)
        from ..config import DEBUG

        if not isinstance(debugging := DEBUG.get() if debug is None else debug, bool):
            raise KernelCallError(f"{caller}: debug must be True, False or None, got {debug!r}", value=debug)
        source = KernelSource.read(source_or_path, options, include_dirs)
        if debugging:
            source = dataclasses.replace(source, options=(*source.options, *DEBUG_OPTIONS))
        if isinstance(name, str) and all_scalars:
            from .launch import check_scalar_names, signature_for

            check_scalar_names(signature_for(source, name), list(scalars), name)  # the kernel exists
        elif not (isinstance(name, str) or callable(name)):
            raise KernelCallError(
                f"{caller}: name must be a name expression such as 'axpy<float>' or a callable "
                f"returning one, got {name!r}",
                kernel=repr(name),
            )
        return cls(source, name, launch, parse_archs(compute_capability), dict(scalars))

    def bind(
        self, args: Sequence[Any], extra: Mapping[str, Any], vmap_method: str | None
    ) -> tuple[str, LaunchConfig, dict[str, Any]]:
        """``(name expression, launch, scalars)`` for a call whose abstract operands, as the
        callables take them, are ``args``; ``extra`` are scalars the call itself gives."""

        def value(v: Any) -> Any:
            return v(*args) if callable(v) else v

        expression = value(self.name)
        if not isinstance(expression, str):
            raise KernelCallError(
                f"cuda_kernel: name must give a name expression string, got {expression!r}",
                kernel=repr(expression),
            )
        config = resolve_config(*(value(v) for v in self.launch), vmap_method=vmap_method)
        scalars = {k: value(v) for k, v in self.scalars.items()}
        both = sorted(set(extra) & set(scalars))
        if both:
            raise KernelCallError(
                f"{expression}: scalar(s) {both} are given both by def_cuda_kernel and by the call; "
                "give each once",
                kernel=expression,
                attributes=both,
            )
        return expression, config, {**scalars, **extra}


def _prepare_call(
    kernel: KernelDef, vmap_method: str | None, batch_dims: int, arrays: tuple[Any, ...], specs: list[Any]
) -> tuple[str, dict[str, Any]] | None:
    """``BridgedFunction``'s ``prepare``: the launch for a call's operands; None when nothing runs."""
    from ..calls.bridge import has_work
    from .launch import element_avals, prepare

    ins, outs = element_avals(arrays, batch_dims), element_avals(specs, batch_dims)
    expression, config, scalars = kernel.bind(ins, {}, vmap_method)
    if config.empty or not has_work(outs):
        return None
    return prepare(kernel.source, expression, ins, outs, scalars, config, kernel.archs, batch_dims > 0)


def cuda_kernel(
    source_or_path: str | os.PathLike[str],
    name: str | Callable[..., str],
    outs: Any,
    *,
    grid: Any = None,
    block: Any = None,
    launch_dims: Any = None,
    threads_per_block: int = 256,
    shared_mem: int = 0,
    vmap_method: str | None = None,
    input_output_aliases: dict[int, int] | None = None,
    compute_capability: Any = None,
    options: Sequence[str] = (),
    include_dirs: Sequence[str | os.PathLike[str]] = (),
    num_batch_dims: int | None = None,
    debug: bool | None = None,
    zeros: Any = None,
    **scalars: Any,
) -> Callable[..., Any]:
    """Create a JAX-callable function from a ``__global__`` CUDA kernel, compiled with NVRTC.

    The source holds device code only (no host launcher, no nvcc needed). The kernel's
    pointer parameters receive the input arrays, then one array per leaf of ``outs`` to
    write, in order; its other parameters are scalars, given here by name and typed from
    the signature. The kernel is compiled (through the disk cache) for the GPUs present
    when the function is traced, and launched from compiled code with ``cuLaunchKernel``
    on XLA's stream: no Python runs per call, and the launch can be captured in a CUDA graph.

    Example::

        add = brainevent.cuda_kernel(SOURCE, "add", jax.ShapeDtypeStruct(x.shape, x.dtype),
                                     launch_dims=lambda x, y: x.size, n=lambda x, y: x.size)
        z = jax.jit(add)(x, y)

    Args:
        source_or_path: CUDA source text, or the path of a ``.cu`` file.
        name: The kernel, as a C++ name expression: ``"add"``, or ``"axpy<float>"`` for a
            template instantiation; or a callable of the inputs' abstract values returning
            one (``lambda x, y: f"axpy<{brainevent.nvrtc.kernel.ctype(x.dtype)}>"``).
        outs: A ``jax.ShapeDtypeStruct`` or a pytree of them; results come back in that shape.
        grid: Grid dimensions (1-3); needs ``block``. Excludes ``launch_dims``.
        block: Block dimensions (1-3); needs ``grid``.
        launch_dims: Total threads (1-3 dims); grid and block follow from ``threads_per_block``.
        threads_per_block: Threads per block with ``launch_dims`` (default 256).
        shared_mem: Dynamic shared memory per block, in bytes.
        vmap_method: How ``jax.vmap`` runs it: ``"sequential"``, ``"sequential_unrolled"``,
            ``"expand_dims"`` or ``"broadcast_all"`` (the last two run the kernel once per batch
            element, with its unbatched shapes, and need ``launch_dims``); ``None``: not vmappable.
        input_output_aliases: ``{input index: output index}`` for in-place updates.
        compute_capability: Architecture(s) to compile for (``"sm_90"``, ``90``, ``"9.0"`` or a
            list); by default ``BRAINEVENT_CUDA_ARCH`` (or ``config.set_compute_capability``)
            if set, as for modules, else those of the visible GPUs.
        options: Further NVRTC options (``"-DBLOCK=128"``, ``"--use_fast_math"``).
        include_dirs: Directories searched for ``#include``; headers found there are part of
            the cache key, so editing one recompiles.
        num_batch_dims: The first ``k`` dims of every array (inputs and results) are independent
            problems: the kernel is written, and ``name``, the launch and the scalars are computed,
            for one batch element (the arrays without those dims), and each call runs it once per
            element. A ``jit`` with inputs sharded along those dims then runs on the local shards
            (no all-gather), and every ``vmap_method`` works. Not with ``input_output_aliases``.
        zeros: Results cleared to zero before the kernel runs, for one that accumulates (XLA hands
            them over uncleared): ``True`` (all), an index into ``outs``' leaves, or a list of them.
        **scalars: The kernel's scalar parameters by name: numbers, or callables of the inputs'
            abstract values (``n=lambda x, y: x.size``). ``grid``, ``block`` and
            ``launch_dims`` may be such callables too.

    Raises:
        KernelCallError: Bad launch configuration, vmap method, kernel name, scalar or operand
            (a ``ValueError``); raised when the function is traced for what depends on the arrays.
        CompileError: NVRTC rejected the source; the message quotes the offending line.
        ToolchainError: libnvrtc cannot be found (``pip install nvidia-cuda-nvrtc``).
    """
    if num_batch_dims is not None and (not is_int(num_batch_dims) or num_batch_dims < 1):
        raise KernelCallError(
            f"num_batch_dims must be a positive int or None, got {num_batch_dims!r}",
            value=repr(num_batch_dims),
        )
    if num_batch_dims and input_output_aliases:
        raise KernelCallError(
            "cuda_kernel: num_batch_dims and input_output_aliases cannot be combined (a call split across "
            "devices writes its own results); drop one",
            value=repr(input_output_aliases),
        )
    launch = (grid, block, launch_dims, threads_per_block, shared_mem)
    kernel = KernelDef.checked(
        "cuda_kernel", source_or_path, name, launch, compute_capability, options, include_dirs, scalars,
        vmap_method, all_scalars=True, debug=debug,
    )  # fmt: skip
    from ..calls.bridge import BridgedFunction
    from ..calls.operands import check_arrays

    title = name if isinstance(name, str) else getattr(name, "__name__", "cuda_kernel")
    batch_dims = num_batch_dims or 0
    check = functools.partial(check_arrays, title, scalars_go="as keywords of cuda_kernel")
    # No launcher_for: the grid and scalars are fixed at trace time; a batching vmap runs per element.
    prepare = functools.partial(_prepare_call, kernel, vmap_method, batch_dims)
    return BridgedFunction(
        prepare, outs, vmap_method, input_output_aliases, title, check_args=check, batch_dims=batch_dims,
        zeros=zeros,
    )  # fmt: skip
