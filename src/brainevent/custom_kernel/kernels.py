"""What an :class:`XLACustomKernel` runs on one platform: each kind of kernel turns the call's
abstract operands and attributes into a *call site* (FFI target, attributes); nothing runs per call."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

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


@dataclass(frozen=True)
class CallSite:
    target: str
    attributes: dict[str, Any]


class PlatformKernel(Protocol):
    description: str

    def call_site(self, call: LoweringCall) -> CallSite: ...


class ModuleFunctionKernel:
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
        self.description = f"compiled function {function.target}"

    def call_site(self, call: LoweringCall) -> CallSite:
        if self.function.spec.scratch:
            raise KernelCallError(
                f"{self.function.target} takes a 'scratch' parameter, which XLACustomKernel cannot "
                "allocate; call the compiled function directly (module.<func>(..., scratch_bytes=...))",
                target=self.function.target,
            )
        self.function.check_arity(len(call.ins), len(call.outs))
        return CallSite(self.function.target, self.function.converted_attrs(call.attrs))


class _Generated:
    """A kernel given directly, or made by ``generator(**attrs)`` once per distinct attrs."""

    def __init__(self, kernel: Any, generator: Callable[..., Any] | None, what: str) -> None:
        if (kernel is None) == (generator is None):
            raise TypeError(f"{what}: pass a kernel or generator=, exactly one of them")
        if generator is not None and not callable(generator):
            raise TypeError(f"{what}: generator must be callable, got {type(generator).__name__}")
        self._kernel = kernel
        self._generator = generator
        self._what = what
        self._made: dict[tuple[tuple[str, Any], ...], Any] = {}
        self._lock = threading.Lock()

    def kernel_for(self, attrs: Mapping[str, Any]) -> Any:
        if self._generator is None:
            if attrs:
                raise KernelCallError(
                    f"{self._what} takes no attributes, got {sorted(attrs)}; define it with "
                    "generator=lambda **attrs: kernel to build the kernel from them",
                    attributes=sorted(attrs),
                )
            return self._kernel
        key = tuple(sorted(attrs.items()))
        with self._lock:
            if key not in self._made:
                self._made[key] = self._generator(**attrs)
            return self._made[key]


class NumbaCpuKernel:
    """A Numba ``@njit`` function on the CPU, called from a compiled handler."""

    def __init__(self, kernel: Any, generator: Callable[..., Any] | None) -> None:
        from ..numba_bridge.cpu_kernel import require_numba

        require_numba()
        self._source = _Generated(kernel, generator, "def_numba_kernel")
        self.description = "Numba kernel (cpu)"

    def call_site(self, call: LoweringCall) -> CallSite:
        import numba
        from numba.core.dispatcher import Dispatcher

        from ..numba_bridge.cpu_kernel import preparer

        func = self._source.kernel_for(call.attrs)
        if not isinstance(func, Dispatcher):
            func = numba.njit(func)
        target, kernel_id = preparer(func)(signature_of(tuple(call.ins), list(call.outs)))
        return CallSite(target, {"kernel_id": np.int64(kernel_id)})


LaunchValue = Any  # an int, a tuple of ints, or a callable(ins, outs) returning one


class NumbaCudaKernel:
    """A Numba-CUDA kernel launched from a compiled handler on XLA's stream; launch settings
    may be callables ``(ins, outs) -> dims`` of the call's abstract operands."""

    def __init__(self, kernel: Any, generator: Callable[..., Any] | None, launch: tuple[Any, ...]) -> None:
        """``launch``: grid, block, launch_dims, threads_per_block, shared_mem."""
        from ..launchers.launch_config import resolve_launch
        from ..numba_bridge.cuda_kernel import require_numba_cuda

        _, dispatcher_type = require_numba_cuda()
        if kernel is not None and not isinstance(kernel, dispatcher_type):
            raise AssertionError(
                f"kernel must be a @numba.cuda.jit kernel (CUDADispatcher), got {type(kernel).__name__}"
            )
        self._source = _Generated(kernel, generator, "def_numba_cuda_kernel")
        self._launch = launch
        if not any(callable(v) for v in launch):
            resolve_launch(*launch)  # fail early
        self._dispatcher_type = dispatcher_type
        self.description = "Numba-CUDA kernel (cuda)"

    def call_site(self, call: LoweringCall) -> CallSite:
        from ..launchers.launch_config import resolve_launch
        from ..numba_bridge.cuda_kernel import preparer

        ins, outs = call.ins, call.outs
        kernel = self._source.kernel_for(call.attrs)
        if not isinstance(kernel, self._dispatcher_type):
            raise AssertionError(
                f"the generator must return a @numba.cuda.jit kernel, got {type(kernel).__name__}"
            )
        config = resolve_launch(*(v(ins, outs) if callable(v) else v for v in self._launch))
        target, kernel_id = preparer(kernel, config)(signature_of(tuple(ins), list(outs)))
        return CallSite(target, {"kernel_id": np.int64(kernel_id)})


class NvrtcKernel:
    """A ``__global__`` CUDA kernel compiled with NVRTC and launched by the cubin launcher; its
    callables take ``(ins, outs)``, and the call's attributes are further scalars, by name."""

    def __init__(self, kernel: KernelDef) -> None:
        self._kernel = kernel
        name = kernel.name
        self.description = f"NVRTC CUDA kernel {name if isinstance(name, str) else '<by call>'} (cuda)"

    def call_site(self, call: LoweringCall) -> CallSite:
        """With batch dims the kernel binds its sizes for one batch element, which the launcher
        runs per element of the (possibly split) call."""
        from ..nvrtc.launch import element_avals, prepare

        ins, outs = element_avals(call.ins, call.batch_dims), element_avals(call.outs, call.batch_dims)
        k = self._kernel
        expression, config, scalars = k.bind((ins, outs), call.attrs, None)
        batched = call.batch_dims > 0
        target, kernel_id = prepare(k.source, expression, ins, outs, scalars, config, k.archs, batched)
        return CallSite(target, {"kernel_id": np.int64(kernel_id)})
