"""One named backend of an ``XLACustomKernel`` on one platform, and how it lowers: a *call site*
(a compiled function, a Numba kernel) emits one custom call to an FFI target; a *kernel generator*
(0.2.1's form: ``generator(outs=..., **attrs)`` returns a function of the input arrays, such as a
``pallas_call``) is traced into the primitive's own lowering with ``mlir.lower_fun``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..errors import KernelCallError
from .kernels import LoweringCall, PlatformKernel


class Lowering(Protocol):
    description: str

    def lower(self, call: LoweringCall) -> Sequence[Any]: ...


class CallSiteLowering:
    """Emits one custom call to the FFI target a :class:`PlatformKernel` names."""

    def __init__(self, kernel: PlatformKernel) -> None:
        self.kernel = kernel
        self.description = kernel.description

    def lower(self, call: LoweringCall) -> Sequence[Any]:
        import jax

        from ..calls.partitioned import batch_partition_attributes

        site = self.kernel.call_site(call)
        extra = None
        if call.batch_dims:
            extra = batch_partition_attributes(call.ctx, site.target, call.batch_dims)
        rule = jax.ffi.ffi_lowering(site.target, operand_output_aliases=call.aliases, extra_attributes=extra)
        return rule(call.ctx, *call.operands, **site.attributes)


class GeneratorLowering:
    """Calls ``generator(outs=..., **attrs)`` and traces the function it returns."""

    def __init__(self, generator: Callable[..., Any], backend: str) -> None:
        self.generator = generator
        self.backend = backend
        self.description = f"kernel generator {getattr(generator, '__qualname__', generator)!r}"

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

        # The generated function is per-device code: by the time it is lowered JAX has
        # checked the types, and its operands are the local blocks. Tracing it with plain
        # types and no mesh keeps code written for one device (a Pallas kernel, which
        # refuses mesh axes that are not manual, mixing in invariant constants) working
        # inside shard_map and under sharded jit.
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
    """A backend registered on an ``XLACustomKernel``: its name, platform and what it runs.

    ``kernel_generator`` is what was given (a generator, a compiled function or a Numba
    kernel); ``lowering`` is how the primitive lowers it (by default: as a generator).
    """

    backend: str
    platform: str
    kernel_generator: Any
    lowering: Lowering = field(default=None, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.lowering is None:
            self.lowering = GeneratorLowering(self.kernel_generator, self.backend)
