"""``defjvp`` (one JVP rule per input) and ``general_batching_rule`` (vmap by a loop) for any JAX
primitive, under brainevent 0.2.1's names; ``XLACustomKernel`` has its own methods for both."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
from jax.extend.core import Primitive
from jax.interpreters import ad


def _primitive_of(primitive: Any) -> Primitive:
    inner = getattr(primitive, "primitive", primitive)  # an XLACustomKernel carries one
    if not isinstance(inner, Primitive):
        raise TypeError(f"defjvp needs a JAX Primitive or an XLACustomKernel, got {type(primitive).__name__}")
    return inner


def defjvp(primitive: Any, *jvp_rules: Callable[..., Any] | None) -> None:
    """Differentiate ``primitive`` with one rule per input.

    ``rule(tangent, *primals, **params)`` returns that input's contribution to the output
    tangent (one per result, as a tuple or list, for a primitive with several results);
    ``None`` marks an input that has no tangent. Contributions are summed. A rule count that
    differs from the number of inputs is a ``ValueError`` when the primitive is differentiated.
    """
    prim = _primitive_of(primitive)
    ad.primitive_jvps[prim] = functools.partial(
        per_input_jvp, checked_rules("defjvp", prim.name, jvp_rules), prim
    )


def checked_rules(
    what: str, name: str, rules: Sequence[Callable[..., Any] | None]
) -> tuple[Callable[..., Any] | None, ...]:
    for i, rule in enumerate(rules):
        if rule is not None and not callable(rule):
            raise TypeError(f"{what}({name!r}): rule {i} must be callable or None, got {rule!r}")
    return tuple(rules)


def per_input_jvp(
    rules: tuple[Callable[..., Any] | None, ...],
    prim: Primitive,
    primals: Sequence[Any],
    tangents: Sequence[Any],
    **params: Any,
) -> tuple[Any, Any]:
    """The JVP of ``prim`` as the sum of each input's rule (see :func:`defjvp`)."""
    if len(rules) != len(primals):
        raise ValueError(
            f"the JVP rules of primitive {prim.name!r}: {len(rules)} rule(s) for {len(primals)} "
            "input(s); give one rule per input, None for an input without a tangent"
        )
    out = prim.bind(*primals, **params)
    outs = out if prim.multiple_results else [out]
    total: list[Any] = [None] * len(outs)
    for i, (rule, tangent) in enumerate(zip(rules, tangents, strict=True)):
        if rule is None or type(tangent) is ad.Zero:
            continue
        part = rule(tangent, *primals, **params)
        if not prim.multiple_results:
            part = [part]
        elif not isinstance(part, (tuple, list)) or len(part) != len(out):
            raise TypeError(
                f"the JVP rule for input {i} of primitive {prim.name!r} must return a tuple or "
                f"list of {len(out)} tangents (one per result), got {type(part).__name__}"
            )
        total = [_add(a, b) for a, b in zip(total, part, strict=True)]
    found = [_zero_like(o) if t is None else t for o, t in zip(outs, total, strict=True)]
    return out, found if prim.multiple_results else found[0]


def _zero_like(primal: Any) -> Any:
    """JAX's symbolic zero tangent for ``primal`` (no array is made)."""
    return ad.Zero(jax.typeof(primal).to_tangent_aval())


def _add(a: Any, b: Any) -> Any:
    if a is None:
        return b
    return a if b is None else a + b


def general_batching_rule(
    prim: Primitive | Callable[..., Any], args: Sequence[Any], axes: Sequence[int | None], **params: Any
) -> tuple[Any, Any]:
    """A batching rule that applies ``prim`` to one batch element at a time.

    Batched operands have their batch axis moved to the front; unbatched ones are passed
    whole to every step. Outputs are batched along axis 0. With no batched operand the
    primitive is applied once and every output is reported unbatched (``None``).
    """

    apply = functools.partial(prim.bind if isinstance(prim, Primitive) else prim, **params)
    batched = [i for i, ax in enumerate(axes) if ax is not None]
    if not batched:
        out = apply(*args)
        return out, jax.tree.map(lambda _: None, out)
    front = {i: jax.numpy.moveaxis(args[i], axes[i], 0) for i in batched}  # type: ignore[arg-type]

    def one(slices: dict[int, Any]) -> Any:
        return apply(*[slices.get(i, a) for i, a in enumerate(args)])

    out = jax.lax.map(one, front)
    return out, jax.tree.map(lambda _: 0, out)
