"""A backend of an ``XLACustomKernel`` (:class:`KernelEntry`) and how it lowers: a *call-site*
kernel (a compiled function, a Numba kernel, an NVRTC kernel) turns the call's abstract operands
and attributes into one custom call to an FFI target; a *kernel generator* (0.2.1's form:
``generator(outs=..., **attrs)`` returns a function of the input arrays, such as a ``pallas_call``)
is traced into the primitive's own lowering with ``mlir.lower_fun``. Nothing runs per call."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..calls.operands import signature_of
from ..errors import KernelCallError

if TYPE_CHECKING:
    from ..nvrtc.kernel import KernelDef


@dataclass(frozen=True)
class LoweringCall:
    """What the primitive's lowering rule hands a backend: one call to lower."""

    ctx: Any  # jax's LoweringRuleContext
    operands: Sequence[Any]
    outs: tuple[Any, ...]  # the declared results (ShapeDtypeStruct-like)
    attrs: Mapping[str, Any]
    aliases: dict[int, int] | None  # operand index -> result index
    batch_dims: int

    @property
    def ins(self) -> Sequence[Any]:
        return self.ctx.avals_in


class CallSiteKernel:
    """Emits one custom call to the FFI target that :meth:`call_site` names."""

    def prepare(self, call: LoweringCall) -> tuple[str, int | dict[str, Any]]:
        """(FFI target, kernel id or the call's attributes) of a kernel registered with a launcher."""
        raise NotImplementedError

    def call_site(self, call: LoweringCall) -> tuple[str, dict[str, Any]]:
        target, kernel_id = self.prepare(call)
        return target, kernel_id if isinstance(kernel_id, dict) else {"kernel_id": np.int64(kernel_id)}

    def lower(self, call: LoweringCall) -> Sequence[Any]:
        import jax

        from ..calls.batching import batch_partition_attributes

        target, attributes = self.call_site(call)
        extra = None
        if call.batch_dims:
            extra = batch_partition_attributes(call.ctx, call.batch_dims)
        rule = jax.ffi.ffi_lowering(target, operand_output_aliases=call.aliases, extra_attributes=extra)
        return rule(call.ctx, *call.operands, **attributes)


@dataclass(frozen=True)
class GeneratorLowering:
    """Calls ``generator(outs=..., **attrs)`` and traces the function it returns."""

    generator: Callable[..., Any]
    backend: str

    def lower(self, call: LoweringCall) -> Sequence[Any]:
        from jax.interpreters import mlir

        outs = call.outs
        kernel = self.generator(outs=outs, **call.attrs)
        if not callable(kernel):
            raise KernelCallError(
                f"the kernel generator of backend {self.backend!r} returned {type(kernel).__name__}, "
                "expected a function of the input arrays (for example a pallas_call, or "
                "numba_kernel(f, outs=outs))",
                backend=self.backend,
            )

        def traced(*args: Any) -> list[Any]:
            return checked_results(self.backend, kernel(*args), outs)

        # Per-device code on local blocks: traced with plain types and no mesh, so code for one
        # device (a Pallas kernel refuses non-manual mesh axes) works in shard_map and sharded jit.
        from jax.core import ShapedArray
        from jax.sharding import AbstractMesh, use_abstract_mesh

        ctx = call.ctx.replace(
            avals_in=[ShapedArray(a.shape, a.dtype, weak_type=a.weak_type) for a in call.ctx.avals_in],
            avals_out=[ShapedArray(a.shape, a.dtype) for a in call.ctx.avals_out],
        )
        with use_abstract_mesh(AbstractMesh((), ())):
            return mlir.lower_fun(traced, multiple_results=True)(ctx, *call.operands)


def checked_results(backend: str, results: Any, outs: Sequence[Any]) -> list[Any]:
    """A generated kernel's results as a list, each matching its declared ``outs`` entry."""
    values = list(results) if isinstance(results, (list, tuple)) else [results]
    if len(values) != len(outs):
        raise KernelCallError(
            f"the kernel of backend {backend!r} returned {len(values)} result(s), but outs declares "
            f"{len(outs)}; return one array per outs entry (a tuple or list)",
            backend=backend,
        )
    for i, (value, spec) in enumerate(zip(values, outs, strict=True)):
        shape, dtype = tuple(getattr(value, "shape", ())), getattr(value, "dtype", None)
        if shape != tuple(spec.shape) or dtype is None or np.dtype(dtype) != np.dtype(spec.dtype):
            got = f"{np.dtype(dtype).name if dtype is not None else '?'}{list(shape)}"
            raise KernelCallError(
                f"the kernel of backend {backend!r} returned result {i} as {got}, but outs declares "
                f"{np.dtype(spec.dtype).name}{list(spec.shape)}; make the kernel produce exactly the "
                "declared shape and dtype",
                backend=backend,
                result=i,
            )
    return values


@dataclass
class KernelEntry:
    """A backend registered on an ``XLACustomKernel``: its name, platform, what was given (a
    generator, a compiled function or a Numba kernel) and how it lowers (by default: as a generator)."""

    backend: str
    platform: str
    kernel_generator: Any
    lowering: CallSiteKernel | GeneratorLowering = field(default=None, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.lowering is None:
            self.lowering = GeneratorLowering(self.kernel_generator, self.backend)


class ModuleFunctionKernel(CallSiteKernel):
    """A function of a module from ``load_cpp_*`` / ``load_cuda_*``; the call's attributes
    are the function's ``attr.*`` parameters, checked and converted as in the call sugar."""

    def __init__(self, function: Any) -> None:
        from ..runtime.kernel_function import KernelFunction

        if not isinstance(function, KernelFunction):
            raise TypeError(
                "def_kernel(platform, function) needs a compiled function such as `module.my_func` "
                f"(a KernelFunction from load_cpp_* or load_cuda_*), got {type(function).__name__}; for "
                "a kernel generator use def_kernel(backend, platform, kernel_generator)"
            )
        self.function = function

    def call_site(self, call: LoweringCall) -> tuple[str, dict[str, Any]]:
        if self.function.spec.scratch:
            raise KernelCallError(
                f"{self.function.target} takes a 'scratch' parameter, which XLACustomKernel cannot "
                "allocate; call the compiled function directly (module.<func>(..., scratch_bytes=...))",
                target=self.function.target,
            )
        self.function.check_arity(len(call.ins), len(call.outs))
        return self.function.target, self.function.converted_attrs(call.attrs)


def _kernel_for(
    kernel: Any, generator: Callable[..., Any] | None, what: str
) -> Callable[[Mapping[str, Any]], Any]:
    """``attrs -> kernel``: the kernel given, or ``generator(**attrs)`` made once per distinct attrs."""
    if (kernel is None) == (generator is None):
        raise TypeError(f"{what}: pass a kernel or generator=, exactly one of them")
    if generator is not None:
        if not callable(generator):
            raise TypeError(f"{what}: generator must be callable, got {type(generator).__name__}")
        made = functools.cache(generator)  # attrs are hashable: XLACustomKernel checks them
        return lambda attrs: made(**attrs)

    def given(attrs: Mapping[str, Any]) -> Any:
        if attrs:
            raise KernelCallError(
                f"{what} takes no attributes, got {sorted(attrs)}; define it with "
                "generator=lambda **attrs: kernel to build the kernel from them",
                attributes=sorted(attrs),
            )
        return kernel

    return given


class NumbaCpuKernel(CallSiteKernel):
    """A Numba ``@njit`` function on the CPU, called from a compiled handler."""

    def __init__(self, kernel: Any, generator: Callable[..., Any] | None) -> None:
        from ..numba_bridge.cpu_kernel import require_numba

        require_numba()
        self._kernel_for = _kernel_for(kernel, generator, "def_numba_kernel")

    def prepare(self, call: LoweringCall) -> tuple[str, int]:
        from ..numba_bridge.cpu_kernel import jitted, preparer

        func = jitted(self._kernel_for(call.attrs), "def_numba_kernel")
        return preparer(func)(signature_of(tuple(call.ins), list(call.outs)))


LaunchValue = Any  # an int, a tuple of ints, or a callable(ins, outs) returning one


class NumbaCudaKernel(CallSiteKernel):
    """A Numba-CUDA kernel launched from a compiled handler on XLA's stream; launch settings
    may be callables ``(ins, outs) -> dims`` of the call's abstract operands."""

    def __init__(self, kernel: Any, generator: Callable[..., Any] | None, launch: tuple[Any, ...]) -> None:
        """``launch``: grid, block, launch_dims, threads_per_block, shared_mem."""
        from ..launchers.launch_config import resolve_launch
        from ..numba_bridge.gpu_kernel import cuda_dispatcher, require_numba_cuda

        require_numba_cuda()
        if kernel is not None:
            cuda_dispatcher(kernel)
        self._kernel_for = _kernel_for(kernel, generator, "def_numba_cuda_kernel")
        self._launch = launch
        if not any(callable(v) for v in launch):
            resolve_launch(*launch)  # fail early

    def prepare(self, call: LoweringCall) -> tuple[str, int]:
        from ..launchers.launch_config import resolve_launch
        from ..numba_bridge.gpu_kernel import cuda_dispatcher, preparer

        ins, outs = call.ins, call.outs
        kernel = cuda_dispatcher(self._kernel_for(call.attrs), "the generator's result")
        config = resolve_launch(*(v(ins, outs) if callable(v) else v for v in self._launch))
        return preparer(kernel, config)(signature_of(tuple(ins), list(outs)))


@dataclass(frozen=True)
class NvrtcKernel(CallSiteKernel):
    """A ``__global__`` CUDA kernel compiled with NVRTC and launched by the cubin launcher; its
    callables take ``(ins, outs)``, and the call's attributes are further scalars, by name."""

    kernel: KernelDef

    def prepare(self, call: LoweringCall) -> tuple[str, dict[str, Any]]:
        """With batch dims the kernel binds its sizes for one batch element, which the launcher
        runs per element of the (possibly split) call."""
        from ..nvrtc.launch import element_avals, prepare

        ins, outs = element_avals(call.ins, call.batch_dims), element_avals(call.outs, call.batch_dims)
        k = self.kernel
        expression, config, scalars = k.bind((ins, outs), call.attrs, None)
        batched = call.batch_dims > 0
        return prepare(k.source, expression, ins, outs, scalars, config, k.archs, batched)
