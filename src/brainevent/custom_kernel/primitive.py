"""``XLACustomKernel``: one named JAX primitive with a kernel per platform and its own rules."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from ..errors import KernelCallError
from .kernels import (
    LaunchValue,
    ModuleFunctionKernel,
    NumbaCpuKernel,
    NumbaCudaKernel,
    PlatformKernel,
)

VMAP_METHODS = ("sequential", "expand_dims", "broadcast_all")
_PLATFORM_ALIASES = {"cpu": "cpu", "gpu": "cuda", "cuda": "cuda"}

# Primitive params must be hashable: result specs travel as (shape, dtype name) pairs and
# attributes as sorted (name, value) pairs.
OutSpecs = tuple[tuple[tuple[int, ...], str], ...]
Attrs = tuple[tuple[str, Any], ...]


def _platform(name: str) -> str:
    try:
        return _PLATFORM_ALIASES[name]
    except (KeyError, TypeError):
        raise ValueError(f"platform must be one of {sorted(_PLATFORM_ALIASES)}, got {name!r}") from None


def _structs(out_specs: OutSpecs) -> list[Any]:
    import jax

    return [jax.ShapeDtypeStruct(shape, np.dtype(dtype)) for shape, dtype in out_specs]


def _hashable_attrs(name: str, attrs: Mapping[str, Any]) -> Attrs:
    items = []
    for key, value in sorted(attrs.items()):
        if np.ndim(value) != 0 or isinstance(value, (list, tuple, dict)):
            raise KernelCallError(
                f"{name}: attribute {key!r} must be a scalar (int, float, bool, NumPy scalar), "
                f"got {value!r}; pass arrays as positional operands",
                attribute=key,
            )
        items.append((key, value))
    return tuple(items)


def _as_list(value: Any) -> list[Any]:
    """A rule's results: a list/tuple as is, a single array (one result or input) as [array]."""
    return list(value) if isinstance(value, (list, tuple)) else [value]


class XLACustomKernel:
    """A named JAX primitive whose kernels come from Numba, Numba-CUDA or compiled modules.

    ``op(*arrays, outs=..., **attrs)`` binds the primitive: its abstract evaluation is
    ``outs`` (a ``jax.ShapeDtypeStruct`` or a pytree of them), and lowering emits one custom
    call to the kernel defined for the platform being compiled for. Scalar keyword
    arguments are attributes: compiled functions receive them as their ``attr.*``
    parameters, Numba kernels through ``generator=``.

    Args:
        name: The primitive's name (shown in jaxprs and errors).
        outs: Default result specs, or a callable ``outs(*arrays, **attrs)`` returning them;
            a call's own ``outs=`` takes precedence.
        num_batch_dims: When set, the first ``num_batch_dims`` dims of every operand and
            result are independent problems: ``jit`` with inputs sharded along them
            partitions the call across devices instead of gathering the inputs.
        vmap_method: Default batching when no rule is defined: ``"sequential"`` (a loop,
            the kernel sees unbatched operands), ``"expand_dims"`` (the kernel sees a
            leading batch axis; unbatched inputs get a size-1 axis) or ``"broadcast_all"``
            (every input broadcast to the batch size).
        input_output_aliases: ``{input index: output index}`` for in-place updates.
    """

    def __init__(
        self,
        name: str,
        *,
        outs: Any = None,
        num_batch_dims: int | None = None,
        vmap_method: str = "sequential",
        input_output_aliases: dict[int, int] | None = None,
    ) -> None:
        from jax.extend.core import Primitive

        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        if vmap_method not in VMAP_METHODS:
            raise ValueError(f"vmap_method must be one of {VMAP_METHODS}, got {vmap_method!r}")
        if num_batch_dims is not None and (
            isinstance(num_batch_dims, bool) or not isinstance(num_batch_dims, int) or num_batch_dims < 1
        ):
            raise ValueError(f"num_batch_dims must be a positive int or None, got {num_batch_dims!r}")
        self.name = name
        self._outs = outs
        self._num_batch_dims = num_batch_dims
        self._vmap_method = vmap_method
        self._aliases = dict(input_output_aliases) if input_output_aliases else None
        self._kernels: dict[str, PlatformKernel] = {}
        self._batching_rule: Callable[..., Any] | None = None
        self._jvp_rule: Callable[..., Any] | None = None
        self._transpose_rule: Callable[..., Any] | None = None
        self.primitive = Primitive(name)
        self.primitive.multiple_results = True
        self._install()

    # -- defining kernels and rules ---------------------------------------------------------

    def def_kernel(self, platform: str, function: Any) -> XLACustomKernel:
        """Use a compiled function (``module.func`` from ``load_cpp_*``/``load_cuda_*``) on
        ``platform`` (``"cpu"``, or ``"gpu"``/``"cuda"``)."""
        resolved = _platform(platform)
        kernel = ModuleFunctionKernel(function)
        if kernel.function.platform != resolved:
            raise ValueError(
                f"{kernel.function.target} was compiled for {kernel.function.platform!r}, not {resolved!r}: "
                "use load_cpp_* modules for 'cpu' and load_cuda_* modules for 'gpu'"
            )
        self._kernels[resolved] = kernel
        return self

    def def_numba_kernel(
        self, kernel: Any = None, *, generator: Callable[..., Any] | None = None
    ) -> XLACustomKernel:
        """Use a Numba ``@njit`` function on the CPU; it receives the inputs, then the outputs
        to write. ``generator(**attrs)`` builds one per distinct attribute values instead."""
        self._kernels["cpu"] = NumbaCpuKernel(kernel, generator)
        return self

    def def_numba_cuda_kernel(
        self,
        kernel: Any = None,
        *,
        generator: Callable[..., Any] | None = None,
        grid: LaunchValue = None,
        block: LaunchValue = None,
        launch_dims: LaunchValue = None,
        threads_per_block: int = 256,
        shared_mem: int = 0,
    ) -> XLACustomKernel:
        """Use a ``@numba.cuda.jit`` kernel on the GPU, launched like
        :func:`brainevent.numba_cuda_kernel`. ``grid``/``block``/``launch_dims`` may be
        callables ``(ins, outs) -> dims`` of the call's abstract operands."""
        self._kernels["cuda"] = NumbaCudaKernel(
            kernel, generator, grid, block, launch_dims, threads_per_block, shared_mem
        )
        return self

    def def_batching_rule(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """``rule(args, axes, *, outs, **attrs) -> (results, out_axes)``, as for a JAX primitive
        (``axes[i]`` is None for an unbatched input). Usable as a decorator."""
        self._batching_rule = rule
        return rule

    def def_jvp_rule(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """``rule(primals, tangents, *, outs, **attrs) -> (primals_out, tangents_out)``, lists
        with one entry per result. Tangents arrive as arrays (zeros where JAX had none)."""
        self._jvp_rule = rule
        return rule

    def def_transpose_rule(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """``rule(cotangents, *args, outs, **attrs) -> one cotangent (or None) per input``.
        Linear inputs arrive as ``jax.interpreters.ad.UndefinedPrimal`` (test with
        ``ad.is_undefined_primal``); cotangents arrive as arrays."""
        self._transpose_rule = rule
        return rule

    @property
    def platforms(self) -> list[str]:
        return sorted(self._kernels)

    # -- calling -----------------------------------------------------------------------------

    def __call__(self, *args: Any, outs: Any = None, **attrs: Any) -> Any:
        import jax
        import jax.numpy as jnp

        from ..numba_bridge.operands import flatten_outs

        arrays = [a if hasattr(a, "dtype") and hasattr(a, "shape") else jnp.asarray(a) for a in args]
        outs = self._outs if outs is None else outs
        if callable(outs) and not hasattr(outs, "shape"):
            outs = outs(*arrays, **attrs)
        if outs is None:
            raise KernelCallError(
                f"{self.name}: no result specs; pass outs=jax.ShapeDtypeStruct(...) to the call "
                "or to XLACustomKernel(..., outs=...)",
                kernel=self.name,
            )
        specs, treedef = flatten_outs(outs)
        out_specs: OutSpecs = tuple((tuple(int(d) for d in s.shape), np.dtype(s.dtype).name) for s in specs)
        batch_dims = self._num_batch_dims or 0
        if batch_dims:
            self._check_batch_dims(arrays, specs, batch_dims)
        results = self.primitive.bind(
            *arrays, out_specs=out_specs, attrs=_hashable_attrs(self.name, attrs), batch_dims=batch_dims
        )
        return jax.tree_util.tree_unflatten(treedef, list(results))

    def _check_batch_dims(self, arrays: Sequence[Any], specs: Sequence[Any], k: int) -> None:
        shapes = [tuple(a.shape) for a in arrays] + [tuple(s.shape) for s in specs]
        leading = {s[:k] for s in shapes}
        if any(len(s) < k for s in shapes) or len(leading) != 1:
            raise KernelCallError(
                f"{self.name}: num_batch_dims={k} needs every operand and result to share its first "
                f"{k} dims, got shapes {shapes}",
                kernel=self.name,
            )

    # -- JAX plumbing --------------------------------------------------------------------------

    def _install(self) -> None:
        from jax._src import dispatch
        from jax.interpreters import ad, batching, mlir

        prim = self.primitive
        prim.def_impl(partial(dispatch.apply_primitive, prim))
        prim.def_abstract_eval(self._abstract_eval)
        for platform in ("cpu", "cuda"):
            mlir.register_lowering(prim, partial(self._lower, platform=platform), platform=platform)
        mlir.register_lowering(prim, partial(self._lower, platform=None))
        batching.primitive_batchers[prim] = self._batch
        ad.primitive_jvps[prim] = self._jvp
        ad.primitive_transposes[prim] = self._transpose

    @staticmethod
    def _abstract_eval(*avals: Any, out_specs: OutSpecs, attrs: Attrs, batch_dims: int) -> list[Any]:
        from jax.core import ShapedArray

        return [ShapedArray(shape, np.dtype(dtype)) for shape, dtype in out_specs]

    def _kernel_for(self, platform: str | None) -> PlatformKernel:
        kernel = self._kernels.get(platform) if platform else None
        if kernel is None:
            hint = {
                "cpu": "op.def_numba_kernel(...) or op.def_kernel('cpu', cpp_module.func)",
                "cuda": "op.def_numba_cuda_kernel(...) or op.def_kernel('gpu', cuda_module.func)",
            }.get(platform or "", "a CPU or CUDA device")
            raise KernelCallError(
                f"XLACustomKernel {self.name!r} has no kernel for platform {platform or 'this backend'!r} "
                f"(it has: {', '.join(self.platforms) or 'none'}); define one with {hint}",
                kernel=self.name,
                platform=platform,
            )
        return kernel

    def _lower(
        self,
        ctx: Any,
        *operands: Any,
        out_specs: OutSpecs,
        attrs: Attrs,
        batch_dims: int,
        platform: str | None,
    ) -> Any:
        import jax

        from .partitioning import batch_partition_attributes, register_batch_partitionable

        kernel = self._kernel_for(platform)
        site = kernel.call_site(ctx.avals_in, _structs(out_specs), dict(attrs))
        extra = None
        if self._num_batch_dims is not None and batch_dims:
            register_batch_partitionable(site.target)
            extra = batch_partition_attributes(ctx, batch_dims)
        rule = jax.ffi.ffi_lowering(site.target, operand_output_aliases=self._aliases, extra_attributes=extra)
        return rule(ctx, *operands, **site.attributes)

    def _batch(
        self, args: Sequence[Any], axes: Sequence[Any], *, out_specs: OutSpecs, attrs: Attrs, batch_dims: int
    ) -> tuple[list[Any], list[Any]]:
        if self._batching_rule is not None:
            results, out_axes = self._batching_rule(
                list(args), list(axes), outs=_structs(out_specs), **dict(attrs)
            )
            return list(results), list(out_axes)
        import jax
        import jax.numpy as jnp

        size = next(a.shape[ax] for a, ax in zip(args, axes, strict=True) if ax is not None)
        moved = [a if ax is None else jnp.moveaxis(a, ax, 0) for a, ax in zip(args, axes, strict=True)]
        if self._vmap_method == "sequential":
            batched = [i for i, ax in enumerate(axes) if ax is not None]

            def one(slices: list[Any]) -> list[Any]:
                full = list(moved)
                for i, piece in zip(batched, slices, strict=True):
                    full[i] = piece
                return list(
                    self.primitive.bind(*full, out_specs=out_specs, attrs=attrs, batch_dims=batch_dims)
                )

            results = jax.lax.map(one, [moved[i] for i in batched])
            return list(results), [0] * len(out_specs)
        if self._vmap_method == "broadcast_all":
            lead = [
                a if ax is not None else jnp.broadcast_to(a, (size, *a.shape))
                for a, ax in zip(moved, axes, strict=True)
            ]
        else:
            lead = [a if ax is not None else jnp.expand_dims(a, 0) for a, ax in zip(moved, axes, strict=True)]
        wide: OutSpecs = tuple(((size, *shape), dtype) for shape, dtype in out_specs)
        results = self.primitive.bind(*lead, out_specs=wide, attrs=attrs, batch_dims=batch_dims + 1)
        return list(results), [0] * len(out_specs)

    def _jvp(
        self,
        primals: Sequence[Any],
        tangents: Sequence[Any],
        *,
        out_specs: OutSpecs,
        attrs: Attrs,
        batch_dims: int,
    ) -> tuple[list[Any], list[Any]]:
        from jax.interpreters import ad

        if self._jvp_rule is None:
            raise NotImplementedError(
                f"XLACustomKernel {self.name!r} has no JVP rule; define one with op.def_jvp_rule(...) "
                "to differentiate through it"
            )
        tangents = [ad.instantiate_zeros(t) for t in tangents]
        primals_out, tangents_out = self._jvp_rule(
            list(primals), tangents, outs=_structs(out_specs), **dict(attrs)
        )
        return _as_list(primals_out), _as_list(tangents_out)

    def _transpose(
        self, cotangents: Any, *args: Any, out_specs: OutSpecs, attrs: Attrs, batch_dims: int
    ) -> list[Any]:
        from jax.interpreters import ad

        if self._transpose_rule is None:
            raise NotImplementedError(
                f"XLACustomKernel {self.name!r} has no transpose rule; define one with "
                "op.def_transpose_rule(...) for reverse-mode differentiation (jax.grad, jax.vjp)"
            )
        cts = [ad.instantiate_zeros(ct) for ct in cotangents]
        result = self._transpose_rule(cts, *args, outs=_structs(out_specs), **dict(attrs))
        result = _as_list(result)
        if len(result) != len(args):
            raise KernelCallError(
                f"XLACustomKernel {self.name!r}: the transpose rule returned {len(result)} cotangent(s) "
                f"for {len(args)} input(s); return one (or None) per input",
                kernel=self.name,
            )
        return result

    def __repr__(self) -> str:
        return f"XLACustomKernel({self.name!r}, platforms={self.platforms})"
