"""The JAX side shared by the Numba bridges and ``cuda_kernel``: specs, ``ffi_call``, vmap and kernel ids."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from .batching import RANK_CHANGING, batch_operands, check_vmap_method, partitioned_call, with_batch_axis
from .declared import is_batched, no_vmap_method, with_zeroed, zeroed_indices
from .ffi import call_target, flatten_outs, vary_like
from .operands import Signature, signature_of

Preparer = Callable[[Signature], tuple[str, int]]
# The FFI target, the kernel id, and what the entry keeps alive (the kernel, so that its id() in
# a key is not reused while the entry lives, and anything the registered launcher points into).
Made = tuple[str, int, tuple[Any, ...]]
# ``(FFI target, kernel id or the call's attributes)`` for a call's operands and result specs, optionally
# with the specs of scratch buffers the kernel writes after its results (Triton's); None: zeros.
CallPreparer = Callable[[tuple[Any, ...], list[Any]], "tuple[str, Any] | tuple[str, int, list[Any]] | None"]

# How a kernel made by a bridge declares its vmap method (the launcher's target names no kernel).
VMAP_FIX = "pass vmap_method='sequential' where the function is made (cuda_kernel, numba_kernel, ...)"
_prepared: dict[Hashable, Made] = {}  # this process's prepared kernels, by (key, signature)


def memoized(key: Hashable, make: Callable[[Signature], Made]) -> Preparer:
    """``prepare(signature) -> (target, kernel id)``, from ``make`` once per key and signature."""

    def prepare(signature: Signature) -> tuple[str, int]:
        hit = _prepared.get((key, signature))
        if hit is None:  # two threads may both make it; the first one stored is kept
            hit = _prepared.setdefault((key, signature), make(signature))
        return hit[0], hit[1]

    return prepare


def has_work(specs: Sequence[Any]) -> bool:
    """Whether any result has an element (a launch writing only empty arrays is skipped)."""
    return any(0 not in tuple(s.shape) for s in specs)


def on_signature(prepare: Preparer, launch: bool = True) -> CallPreparer:
    """A call preparer from a Numba one; ``launch=False``: nothing runs, the operands are still checked."""

    def call(args: tuple[Any, ...], specs: list[Any]) -> tuple[str, int] | None:
        signature = signature_of(args, specs)
        return prepare(signature) if launch and has_work(specs) else None

    return call


_ABI_TAG = re.compile(rb"B(\d+)v(\d+)")


def stable_text(text: str | bytes) -> bytes:
    """Numba's output with the uids of its ABI tags ``B<n>v<uid>`` (a per-process counter) renumbered
    by first appearance, so that kernel ids match across processes and different functions differ."""
    data = text.encode() if isinstance(text, str) else text
    order: dict[bytes, int] = {}

    def renumber(match: re.Match[bytes]) -> bytes:
        length, uid = match.group(1), match.group(2)
        if int(length) != len(uid) + 1:  # not an ABI tag, just bytes that look like one
            return match.group(0)
        tag = b"v%d" % order.setdefault(uid, len(order))
        return b"B%d%s" % (len(tag), tag)

    return _ABI_TAG.sub(renumber, data)


class BridgedFunction:
    """Calls the kernel that ``prepare(args, specs)`` compiles and registers (a ``CallPreparer``).

    ``launcher_for(n_in, n_out)``: the launcher without compiling, for a rank-changing vmap's
    unbatched trace (without it a batching ``vmap_method`` runs per batch element); ``check_args``
    sees every call's arguments first; ``batch_dims``: see ``partitioned_call``; ``zeros``: the
    results cleared to zero before the kernel runs (``zeroed_indices``).
    """

    def __init__(
        self,
        prepare: CallPreparer,
        outs: Any,
        vmap_method: str | None,
        input_output_aliases: dict[int, int] | None,
        name: str,
        *,
        launcher_for: Callable[[int, int], Any] | None = None,
        check_args: Callable[[tuple[Any, ...]], None] | None = None,
        batch_dims: int = 0,
        zeros: Any = None,
    ) -> None:
        check_vmap_method(vmap_method)
        self._prepare = prepare
        self._launcher_for = launcher_for
        self._specs, self._treedef = flatten_outs(outs, name)
        self._rank_changing = vmap_method in RANK_CHANGING
        self._vmap_method = self._given_vmap_method = vmap_method
        # A rank-changing method either compiles the kernel again for the batched ranks (a
        # custom_vmap rule) or, without ``launcher_for``, becomes JAX's sequential method, which
        # calls the unbatched launch once per batch element (an unbatched input whole to every one).
        if launcher_for is None and self._rank_changing:
            self._vmap_method, self._rank_changing = "sequential", False
        self._aliases = dict(input_output_aliases) if input_output_aliases else None
        self._zeros = zeroed_indices(name, zeros, len(self._specs), self._aliases)
        self._vmappable: dict[tuple[Any, ...], Callable[..., Any]] = {}
        self._check_args = check_args
        self._batch_dims = batch_dims
        self.__name__ = name

    def __call__(self, *args: Any) -> Any:
        import jax

        if self._check_args is not None:
            self._check_args(args)
        if self._given_vmap_method is None and any(is_batched(a) for a in args):
            raise no_vmap_method(self.__name__, VMAP_FIX)
        if self._batch_dims:
            args = tuple(batch_operands(self.__name__, args, self._specs, self._batch_dims))
        if self._rank_changing:
            flat = self._batchable(tuple(self._specs))(*args)
        else:
            flat = self._invoke(args, self._specs)
        return jax.tree_util.tree_unflatten(self._treedef, list(flat))

    def _invoke(self, args: tuple[Any, ...], specs: list[Any], lenient: bool = False) -> list[Any]:
        try:
            prepared = self._prepare(args, specs)
        except Exception:
            if not lenient or self._launcher_for is None:
                raise
            # custom_vmap traces the unbatched body even when only the batched rule runs;
            # a kernel written for the batched ranks may not compile unbatched. An id that is
            # never registered makes an actual unbatched call fail at run time instead.
            prepared = self._launcher_for(len(args), len(specs)).target, 0
        if prepared is None:
            import jax.numpy as jnp

            return vary_like([jnp.zeros(s.shape, s.dtype) for s in specs], args)
        target, kernel_id, *scratch = prepared  # the kernel id, or the call's attributes
        attrs = kernel_id if isinstance(kernel_id, dict) else {"kernel_id": np.int64(kernel_id)}
        method = None if self._rank_changing else self._vmap_method
        args, aliases = with_zeroed(self.__name__, self._zeros, args, specs, method, self._aliases)
        if self._batch_dims:
            return partitioned_call(
                target, args, specs, self._batch_dims, self._given_vmap_method, attrs, aliases
            )
        every = [*specs, *(scratch[0] if scratch else ())]  # Triton's scratch buffers after the results
        options: dict[str, Any] = {"vmap_method": method, "input_output_aliases": aliases}
        return call_target(target, args, every, vmap_fix=VMAP_FIX, **options, **attrs)[: len(specs)]

    def _batchable(self, specs: tuple[Any, ...]) -> Callable[..., Any]:
        """A custom_vmap function for these result specs; batching re-enters with batched specs."""
        key = tuple((tuple(s.shape), np.dtype(s.dtype).str) for s in specs)
        found = self._vmappable.get(key)
        if found is not None:
            return found
        import jax

        @jax.custom_batching.custom_vmap
        def call(*args: Any) -> list[Any]:
            return self._invoke(args, list(specs), lenient=True)

        @call.def_vmap
        def rule(axis_size: int, in_batched: list[bool], *args: Any) -> tuple[list[Any], list[bool]]:
            args = tuple(with_batch_axis(args, in_batched, axis_size, self._vmap_method))
            batched = tuple(jax.ShapeDtypeStruct((axis_size, *s.shape), s.dtype) for s in specs)
            results = self._batchable(batched)(*args)
            return list(results), [True] * len(results)

        self._vmappable[key] = call
        return call
