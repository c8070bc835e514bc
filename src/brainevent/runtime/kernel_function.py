"""KernelFunction: ``mod.<func>(...)``, the call sugar over ``jax.ffi.ffi_call`` that a
CompiledModule hands out for each of its functions (on first use)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..calls.declared import check_call, with_zeroed
from ..errors import KernelNotAvailableError
from ..platforms import HOST_PLATFORM, platform_class
from .attrs import call_error, convert_attr
from .results import result_specs, scratch_result

if TYPE_CHECKING:
    from ..spec.model import FunctionSpec


class KernelFunction:
    """``mod.<func>(*arrays, outs=None, scratch_bytes=None, **attrs)``: calls the FFI target
    under or outside jit.

    ``outs`` is a ``jax.ShapeDtypeStruct`` (or anything with ``shape`` and ``dtype``)
    or a sequence of them, one per ``ret``; by default each result takes the shape
    and dtype of the first input. ``scratch_bytes`` sizes a ``scratch`` parameter: an int,
    or a callable given the input arrays (their shapes and dtypes) that returns one.
    Hashable by identity, so ``jax.jit(mod.func)`` works.

    Two settings, assigned on the function (``mod.func.vmap_method = "expand_dims"``):
    ``vmap_method`` is how ``jax.vmap`` batches it (``jax.ffi.ffi_call``'s methods; None
    refuses vmap); ``num_batch_dims = k`` declares the first ``k`` dims of every operand and
    result independent problems, so ``jax.jit`` with inputs sharded along them runs the call
    on each device's shard instead of gathering them (docs/transformations.md).
    """

    # A plain class, as is CompiledModule: the first call of a process imports this module.

    def __init__(
        self,
        target: str,
        spec: FunctionSpec,
        vmap_method: str | None = None,
        platform: str = HOST_PLATFORM,  # a name in brainevent.platforms: it checks the inputs
        # Why the module's targets were not registered in this process (recorded at load
        # time); a call then fails here, naming the reason, instead of in XLA with "No FFI handler".
        unregistered: str | None = None,
        module: str = "",
    ) -> None:
        # The spec's declarations (vmap_method=, num_batch_dims= in the arg_spec) are the defaults.
        self.target, self.spec, self.vmap_method = target, spec, vmap_method or spec.vmap_method
        self.num_batch_dims: int | None = spec.num_batch_dims
        self.platform, self.unregistered, self.module = platform, unregistered, module

    def __repr__(self) -> str:
        return f"KernelFunction(target={self.target!r}, spec={self.spec!r}, platform={self.platform!r})"

    def __call__(self, *arrays: Any, outs: Any = None, scratch_bytes: Any = None, **attrs: Any) -> Any:
        from ..calls.ffi import call_target
        from ..spec.out_shape import declares_zeros

        if self.unregistered is not None:
            kind, fix = platform_class(self.platform).unregistered_help()
            message = (
                f"{self.target}: module {self.module!r} was built for {kind} but not registered with JAX "
                f"in this process, so it cannot be called: {self.unregistered}. {fix}"
            )
            where = {"target": self.target, "module": self.module, "platform": self.platform}
            raise KernelNotAvailableError(message, **where, reason=self.unregistered)
        spec = self.spec
        self.check_arity(len(arrays))
        converted = self.converted_attrs(attrs)
        platform_class(self.platform).check_inputs(self.target, arrays)
        check_call(self.target, spec, arrays)
        specs = result_specs(self.target, spec, arrays, converted, outs)
        zeroed = [i for i, p in enumerate(spec.rets) if declares_zeros(p.shape)]
        arrays, aliases = with_zeroed(self.target, zeroed, arrays, specs, self.vmap_method)
        single = len(spec.rets) == 1 and not isinstance(outs, (list, tuple))
        k = self.num_batch_dims
        if k is not None:
            from ..calls.batching import partitioned_call

            if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                raise call_error(
                    self.target, f"num_batch_dims must be a positive int (or None), got {k!r}", value=k
                )
            if spec.scratch or scratch_bytes is not None:
                raise call_error(
                    self.target,
                    "a function with a 'scratch' parameter cannot declare batch dims (its scratch buffer is "
                    "not split with the operands); set num_batch_dims = None",
                )
            out = partitioned_call(self.target, arrays, specs, k, self.vmap_method, converted, aliases)
        else:
            if spec.scratch or scratch_bytes is not None:  # one more result (results.py), dropped below
                specs.append(scratch_result(self.target, spec, arrays, scratch_bytes))
            options: dict[str, Any] = {"vmap_method": self.vmap_method, "input_output_aliases": aliases}
            out = call_target(self.target, arrays, specs, **options, **converted)
            out = out[: len(spec.rets)]
        if outs is None or isinstance(outs, (list, tuple)):
            return out[0] if single else out
        import jax  # outs is one spec, or a pytree of them: the results come back in its shape

        from ..calls.ffi import is_spec

        return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(outs, is_leaf=is_spec), list(out))

    def check_arity(self, n_inputs: int, n_outputs: int | None = None) -> None:
        """KernelCallError unless the call passes as many inputs (and outputs) as the spec."""
        spec = self.spec
        if n_inputs != len(spec.args):
            message = f"expected {len(spec.args)} input array(s) ({' '.join(spec.tokens())}), got {n_inputs}"
            raise call_error(self.target, message)
        if n_outputs is not None and n_outputs != len(spec.rets):
            raise call_error(
                self.target, f"expected {len(spec.rets)} result spec(s) (one per 'ret'), got {n_outputs}"
            )

    def converted_attrs(self, attrs: Mapping[str, Any]) -> dict[str, Any]:
        """The attributes as NumPy scalars of their declared types; KernelCallError naming
        any unknown, missing or out-of-range one."""
        declared = {p.name: p.dtype for p in self.spec.attrs}
        unknown, missing = sorted(set(attrs) - set(declared)), sorted(set(declared) - set(attrs))
        if unknown:
            message = f"unexpected attribute(s) {unknown}; it takes {sorted(declared) or 'no attributes'}"
            raise call_error(self.target, message)
        if missing:
            raise call_error(self.target, f"missing attribute(s) {missing}; pass them as keywords")
        return {
            name: convert_attr(self.target, name, dtype or "float64", attrs[name])
            for name, dtype in declared.items()
        }
