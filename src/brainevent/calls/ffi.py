"""The one place our call paths issue ``jax.ffi.ffi_call``, and the result types of a custom call,
derived from its inputs' types (written once for every call path).

Under ``shard_map`` a result varies over every manual axis any input varies over, and the
inputs are cast up to that union first (docs/transformations.md, "One rule for result types").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def is_spec(value: Any) -> bool:
    """The one "is it an array" check: an array, a tracer or a ShapeDtypeStruct (shape and dtype)."""
    return hasattr(value, "shape") and hasattr(value, "dtype")


def flatten_outs(outs: Any, owner: str) -> tuple[list[Any], Any]:
    """``outs`` (one spec or a pytree of them) as a flat list of ShapeDtypeStructs plus the treedef
    to rebuild the results, for every kind of call; ``owner`` (the kernel or target) names them in
    errors."""
    import jax

    leaves, treedef = jax.tree_util.tree_flatten(outs, is_leaf=is_spec)
    if not leaves:
        raise ValueError("outs must hold at least one jax.ShapeDtypeStruct")
    for leaf in leaves:
        if not is_spec(leaf):
            raise TypeError(f"outs= entries need .shape and .dtype (use jax.ShapeDtypeStruct), got {leaf!r}")
    specs = [jax.ShapeDtypeStruct(tuple(leaf.shape), leaf.dtype) for leaf in leaves]
    check_sizes(owner, specs)
    return specs, treedef


def check_sizes(owner: str, specs: Sequence[Any]) -> None:
    """KernelCallError naming the first result XLA cannot size: a negative dim, or more than
    2**63-1 bytes (XLA would abort the process). Every result shape a call makes (declared,
    given or widened by ``vmap``) passes here, where ``outs`` enter and where results are typed."""
    import numpy as np

    from ..errors import KernelCallError
    from ..spec.out_shape import size_problem

    for index, spec in enumerate(specs):
        shape = tuple(spec.shape)
        known = [int(d) for d in shape if isinstance(d, (int, np.integer))]  # symbolic dims: jax.export's
        problem = size_problem(known, np.dtype(spec.dtype).itemsize)
        if problem is not None:
            raise KernelCallError(
                f"{owner}: result {index} of shape {shape} and dtype {np.dtype(spec.dtype)}: {problem}. Fix: "
                "size the result within those bounds (through outs=, scratch_bytes=, or the attributes "
                "a declared ret:(...) shape names)",
                kernel=owner,
                result=index,
                value=str(shape),
            )


def varying_axes(aval: Any) -> frozenset[Any]:
    """The manual mesh axes a value varies over (empty outside ``shard_map`` or unchecked)."""
    return frozenset(getattr(getattr(aval, "mat", None), "varying", ()))  # mat: its ManualAxisType


def union_of(avals: Sequence[Any]) -> frozenset[Any]:
    return frozenset[Any]().union(*map(varying_axes, avals))


def align_inputs(inputs: Sequence[Any]) -> tuple[list[Any], frozenset[Any]]:
    """The inputs cast to vary over the union of their varying axes, and that union."""
    import jax

    avals = [jax.typeof(x) for x in inputs]
    axes = union_of(avals)
    missing = [axes - varying_axes(aval) for aval in avals]
    cast = [
        jax.lax.pcast(x, _ordered(m), to="varying") if m else x for x, m in zip(inputs, missing, strict=True)
    ]
    return cast, axes


def _ordered(axes: frozenset[Any]) -> tuple[Any, ...]:
    return tuple(sorted(axes, key=str))


def vary_like(values: Sequence[Any], inputs: Sequence[Any]) -> list[Any]:
    """``values`` made instead of a kernel's (zeros for empty outputs), cast to vary as its would."""
    import jax

    axes = union_of([jax.typeof(x) for x in inputs])
    return [jax.lax.pcast(v, _ordered(axes), to="varying") for v in values] if axes else list(values)


def typed_like(spec: Any, template: Any) -> Any:
    """``spec``'s shape and dtype on ``template`` (an input's aval varying over the union), keeping
    what else it carries (abstract mesh, memory space) without naming fields that change."""
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    shape = tuple(int(d) for d in spec.shape)
    sharding = NamedSharding(template.sharding.mesh, P(*([None] * len(shape))))
    return template.update(shape=shape, dtype=spec.dtype, sharding=sharding, weak_type=False)


def result_types(owner: str, specs: Sequence[Any], inputs: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """``(inputs aligned, result types)`` for an FFI call of ``inputs`` returning ``specs``; specs
    come back as given outside ``shard_map``, or when already typed with a manual-axis type."""
    import jax

    check_sizes(owner, specs)
    aligned, axes = align_inputs(inputs)
    if not axes:
        return aligned, list(specs)
    template = jax.typeof(aligned[0])
    return aligned, [
        s if getattr(s, "manual_axis_type", None) is not None else typed_like(s, template) for s in specs
    ]


def abstract_results(owner: str, avals_in: Sequence[Any], outs: Sequence[Any]) -> list[Any]:
    """The same rule for a primitive's abstract eval (declared results are ShapedArrays)."""
    check_sizes(owner, outs)
    axes = union_of(avals_in)
    if not axes:
        return list(outs)
    if any(varying_axes(a) != axes for a in avals_in):
        # Every call path aligns its inputs first; a bind that skipped it is a bug of ours.
        raise ValueError(
            f"the inputs of a custom call vary over different manual axes "
            f"({[sorted(map(str, varying_axes(a))) for a in avals_in]}); cast them with "
            "jax.lax.pcast(x, axes, to='varying') before the call"
        )
    return [typed_like(o, avals_in[0]) for o in outs]


def call_target(
    target: str,
    inputs: Sequence[Any],
    specs: Sequence[Any],
    *,
    vmap_method: str | None = None,
    input_output_aliases: dict[int, int] | None = None,
    vmap_fix: str = "",
    **attrs: Any,
) -> list[Any]:
    """Call FFI target ``target`` on ``inputs``; one result per spec, typed as the inputs.
    ``vmap_fix``: how to declare a vmap method, for ``jax.vmap`` of a call without one."""
    import jax

    if target not in _called:
        _called[target] = vmap_fix
        _own_rules()
    aligned, types = result_types(target, specs, inputs)
    call = jax.ffi.ffi_call(target, types, vmap_method=vmap_method, input_output_aliases=input_output_aliases)
    return list(call(*aligned, **attrs))


# The targets our calls issued, and how to declare their vmap method: JAX's rules for them give ours.
_called: dict[str, str] = {}


def not_differentiable(target: str) -> Exception:
    from ..errors import KernelCallError

    return KernelCallError(
        f"The FFI call to {target} cannot be differentiated: a compiled kernel has no derivative of "
        "its own. Pair it with the kernels of its derivatives: f = brainevent.differentiable(f, vjp=bwd, "
        "jvp=...) (docs/transformations.md)",
        target=target,
    )


def _own_rules() -> None:
    """Our errors for ``jax.grad``/``jax.jvp`` of our FFI calls, and for ``jax.vmap`` of one without
    a vmap method that was traced outside it (``jax.vmap(jax.jit(f))``); JAX's for everyone else's."""
    from jax.interpreters import ad, batching

    try:  # JAX's primitive behind jax.ffi.ffi_call (internal: without it, JAX's errors stay)
        from jax._src import ffi as jax_ffi

        prim = jax_ffi.ffi_call_p
        jax_jvp = ad.primitive_jvps[prim]
        batchers = getattr(batching, "fancy_primitive_batchers", {})  # rules of (axis data, args, dims)
        jax_batch: Any = batchers.get(prim)
    except (ImportError, AttributeError, KeyError):
        return
    if getattr(jax_jvp, "__module__", None) == __name__:
        return

    def jvp(primals: Any, tangents: Any, *, target_name: str, **params: Any) -> Any:
        if target_name in _called:
            raise not_differentiable(target_name)
        return jax_jvp(primals, tangents, target_name=target_name, **params)

    def batch(axis: Any, args: Any, dims: Any, *, target_name: str, vmap_method: Any, **params: Any) -> Any:
        if target_name in _called and vmap_method is None and any(d is not None for d in dims):
            from .declared import no_vmap_method

            raise no_vmap_method(target_name, _called[target_name])
        return jax_batch(axis, args, dims, target_name=target_name, vmap_method=vmap_method, **params)

    ad.primitive_jvps[prim] = jvp
    if jax_batch is not None:
        batchers[prim] = batch


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

    specs, treedef = flatten_outs(result_shape_dtypes, target_name)
    single = not isinstance(result_shape_dtypes, (list, tuple)) and len(specs) == 1

    def call(*inputs: Any, **attrs: Any) -> Any:
        _check_target(target_name)
        options: dict[str, Any] = {"vmap_method": vmap_method, "input_output_aliases": input_output_aliases}
        results = call_target(target_name, inputs, specs, **options, **attrs)
        return results[0] if single else jax.tree_util.tree_unflatten(treedef, results)

    return call


def _check_target(target: str) -> None:
    """A target a loaded module lacks ("m.stpe" beside "m.step"): a KernelCallError naming the
    module's targets, closest first, where XLA would say NOT_FOUND. Other names are XLA's."""
    from ..runtime.registry import registered_targets

    known = registered_targets()
    module = target.rpartition(".")[0]
    siblings = sorted(t for t in known if t.rpartition(".")[0] == module)
    if target in known or not module or not siblings:
        return
    from jaxlib import xla_client

    if target in getattr(xla_client, "custom_call_targets", lambda _: ())("cpu"):  # through JAX directly
        return
    from ..errors import KernelCallError
    from ..spec.names import close_matches

    ordered = ", ".join(repr(t) for t in dict.fromkeys([*close_matches(target, siblings), *siblings]))
    raise KernelCallError(
        f"ffi_call({target!r}): no FFI target of that name is registered; module {module!r} registered "
        f"{ordered}. Check the spelling (brainevent.list_registered_targets() lists every target)",
        target=target,
    )
