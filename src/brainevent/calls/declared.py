"""What a function's declarations ask of each call (docs/arg-spec.md): inputs of their declared
dtypes, results cleared to zero before the kernel runs, and a vmap method before ``jax.vmap``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import KernelCallError

if TYPE_CHECKING:
    from ..spec.model import FunctionSpec


def is_batched(value: Any) -> bool:
    """Whether ``value`` is ``jax.vmap``'s tracer (JAX has no public name for its class)."""
    return type(value).__name__ == "BatchTracer"


def no_vmap_method(owner: str, how: str = "") -> Any:
    """The error for ``jax.vmap`` of a call that declares no vmap method; ``how``: where to
    declare it (by default, a module function's two ways)."""
    function = owner.rpartition(".")[2]
    how = how or (
        f"'vmap_method=sequential' among the arg_spec tokens (the '// @BE {function} ...' line, or "
        f"functions={{{function!r}: '... vmap_method=sequential'}}), or on the function: "
        f"mod.{function}.vmap_method = 'sequential'"
    )
    return call_error(
        owner,
        f"jax.vmap needs a vmap method, and none is declared. Declare one: {how} (one of 'sequential', "
        "'sequential_unrolled', 'expand_dims', 'broadcast_all')",
        value=None,
    )


def check_call(target: str, spec: FunctionSpec, arrays: Sequence[Any]) -> None:
    """KernelCallError for an input of another dtype than its ``arg:<type>`` (``jax.vmap`` without
    a vmap method gets :func:`no_vmap_method` from the batching rule, ffi.py, under ``jit`` too)."""
    import jax

    for index, (p, array) in enumerate(zip(spec.args, arrays, strict=False)):
        if p.dtype is None or not hasattr(array, "dtype"):  # any dtype; not an array: JAX refuses it
            continue
        got = np.dtype(jax.dtypes.canonicalize_dtype(array.dtype)).name  # as JAX will pass it
        if got != p.dtype:
            raise call_error(
                target,
                f"input {index} '{p.name}' is declared arg:{p.dtype} but got dtype {got} (shape "
                f"{tuple(np.shape(array))}); the kernel was not run. "
                f"Fix: pass {p.name}.astype(jnp.{p.dtype})",
                parameter=p.name,
                value=got,
            )


Aliases = dict[int, int] | None  # {input index: result index}, as input_output_aliases


def zeroed_indices(owner: str, zeros: Any, n_results: int, aliases: Aliases) -> tuple[int, ...]:
    """The results a kind's ``zeros=`` names: True (every result), an index, or a sequence of them
    (in the order of ``outs``' leaves); KernelCallError naming a bad value, before anything compiles."""
    if zeros is None or zeros is False:
        return ()
    items = list(range(n_results)) if zeros is True else [zeros] if isinstance(zeros, int) else zeros
    if not (isinstance(items, list | tuple) and items) or any(
        isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n_results for i in items
    ):
        one = f"the index of one of its {n_results} result(s) (0 to {n_results - 1}, outs' leaves in order)"
        why = f"names no result to clear: expected True (every result), {one} or a list of them"
        raise call_error(owner, f"zeros={zeros!r} {why}. Fix: e.g. zeros=0", value=repr(zeros))
    if taken := sorted(set(items) & set((aliases or {}).values())):
        why = "is both cleared to zero (zeros=) and aliased to an input (input_output_aliases)"
        raise call_error(owner, f"result {taken[0]} {why}. Fix: drop it from one of them", value=repr(zeros))
    return tuple(sorted(set(items)))


def with_zeroed(
    target: str, indices: Sequence[int], arrays: Sequence[Any], specs: Sequence[Any], vmap_method: str | None,
    aliases: Aliases = None,
) -> tuple[tuple[Any, ...], Aliases]:  # fmt: skip
    """The one rule of results cleared to zero before the kernel runs, every kind's: ``arrays``
    followed by a buffer of zeros per result in ``indices``, each aliased to its result in
    ``aliases`` (``{input: result}``); the binding or launcher reads no input past its own."""
    if not indices:
        return tuple(arrays), aliases
    if vmap_method == "expand_dims":  # an unbatched operand gets a batch dim of 1, its result the whole batch
        raise call_error(
            target,
            "a result declared ':zeros' is passed in aliased to its result, which "
            "vmap_method='expand_dims' cannot batch (the two would differ in shape). "
            "Fix: use vmap_method='broadcast_all' or 'sequential'",
            value=vmap_method,
        )
    import jax.numpy as jnp

    zeros = [jnp.zeros(specs[i].shape, specs[i].dtype) for i in indices]
    shared = {**(aliases or {}), **{len(arrays) + j: i for j, i in enumerate(indices)}}
    return (*arrays, *zeros), shared


def call_error(target: str, message: str, **data: Any) -> KernelCallError:
    """A call's error: the message starts with the target, whose name the data carries too."""
    return KernelCallError(f"{target}: {message}", target=target, **data)
