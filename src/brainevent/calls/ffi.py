"""The one place our call paths issue ``jax.ffi.ffi_call``, so result types follow :mod:`.results`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .results import flatten_outs, result_types


def call_target(
    target: str,
    inputs: Sequence[Any],
    specs: Sequence[Any],
    *,
    vmap_method: str | None = None,
    input_output_aliases: dict[int, int] | None = None,
    **attrs: Any,
) -> list[Any]:
    """Call FFI target ``target`` on ``inputs``; one result per spec, typed as the inputs."""
    import jax

    aligned, types = result_types(specs, inputs)
    call = jax.ffi.ffi_call(target, types, vmap_method=vmap_method, input_output_aliases=input_output_aliases)
    return list(call(*aligned, **attrs))


def ffi_call(
    target_name: str,
    result_shape_dtypes: Any,
    *,
    vmap_method: str | None = None,
    input_output_aliases: dict[int, int] | None = None,
) -> Callable[..., Any]:
    """``jax.ffi.ffi_call`` with the result rule above, for code that calls targets by name::

        out = brainevent.ffi_call("mymod.step", jax.ShapeDtypeStruct(x.shape, x.dtype),
                                  vmap_method="sequential")(x, w, scale=2.0)

    Same arguments and results as JAX's; inside ``shard_map`` the inputs are cast to vary
    over the union of their manual axes and the results vary over it too, so they can be
    carried through ``fori_loop``/``scan``/``while_loop``/``cond``.
    """
    import jax

    specs, treedef = flatten_outs(result_shape_dtypes)
    single = not isinstance(result_shape_dtypes, (list, tuple)) and len(specs) == 1

    def call(*inputs: Any, **attrs: Any) -> Any:
        options: dict[str, Any] = {"vmap_method": vmap_method, "input_output_aliases": input_output_aliases}
        results = call_target(target_name, inputs, specs, **options, **attrs)
        return results[0] if single else jax.tree_util.tree_unflatten(treedef, results)

    return call
