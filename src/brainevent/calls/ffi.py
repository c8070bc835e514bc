"""The one place our call paths issue ``jax.ffi.ffi_call``.

Module functions, the Numba bridges, Triton kernels and scratch results all come here, so
the result types follow :mod:`.results` wherever the call is made from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .results import result_types


def ffi_call(
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
    call = jax.ffi.ffi_call(
        target, list(types), vmap_method=vmap_method, input_output_aliases=input_output_aliases
    )
    return list(call(*aligned, **attrs))


def ffi_outs(outs: Any, *inputs: Any) -> Any:
    """``outs`` (a spec or a pytree of specs) typed for a call on ``inputs``, for code that
    calls ``jax.ffi.ffi_call`` itself::

        out = jax.ffi.ffi_call(target, brainevent.ffi_outs(spec, x, y))(x, y)

    Inside ``shard_map`` the specs then vary over the inputs' manual axes, so the results can
    be loop carries. The inputs must already agree on their varying axes (JAX checks that);
    outside ``shard_map`` the specs come back unchanged.
    """
    import jax

    from .results import flatten_outs

    specs, treedef = flatten_outs(outs)
    _, types = result_types(specs, inputs)
    return jax.tree_util.tree_unflatten(treedef, types)
