"""The vmap, JVP and transpose rules of an ``XLACustomKernel`` and the defaults without them, and
``defjvp`` (one JVP rule per input) and ``general_batching_rule`` (vmap by a loop) for any JAX
primitive, under brainevent 0.2.1's names."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import jax
from jax.extend.core import Primitive
from jax.interpreters import ad

from ..errors import KernelCallError

# Bind parameters that are not attributes for the kernel.
CONTROL_PARAMS = ("backend", "batch_dims")


def _kernel_attrs(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k not in CONTROL_PARAMS}


def _with_attrs(rule: Callable[..., Any], tangent: Any, *primals: Any, outs: Any, **params: Any) -> list[Any]:
    """A def_jvp_rule2 rule called with the kernel's attributes alone, its tangents as a list."""
    return _as_list(rule(tangent, *primals, outs=outs, **_kernel_attrs(params)))


def _as_list(value: Any) -> list[Any]:
    """A rule's results: a list/tuple as is, a single array (one result or input) as [array]."""
    return list(value) if isinstance(value, (list, tuple)) else [value]


class Rules:
    """The rule methods of :class:`XLACustomKernel` and the JAX rules that call them."""

    name: str
    primitive: Any
    _vmap_method: str
    _batching_rule: Callable[..., Any] | None = None
    _jvp_rule: Callable[..., Any] | None = None
    _jvp_rules_per_input: tuple[Callable[..., Any] | None, ...] | None = None
    _transpose_rule: Callable[..., Any] | None = None
    _rule_backend: threading.local

    def def_batching_rule(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """``rule(args, axes, *, outs, **attrs) -> (results, out_axes)``, as for a JAX primitive
        (``axes[i]`` is None for an unbatched input). Usable as a decorator."""
        self._batching_rule = rule
        return rule

    def register_general_batching(self) -> None:
        """Drops a rule set with :meth:`def_batching_rule`: ``vmap`` uses ``vmap_method`` again."""
        self._batching_rule = None

    def def_jvp_rule(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """``rule(primals, tangents, *, outs, **attrs) -> (primals_out, tangents_out)``, lists
        with one entry per result. Tangents arrive as arrays (zeros where JAX had none)."""
        self._jvp_rule, self._jvp_rules_per_input = rule, None
        return rule

    def def_jvp_rule2(self, *rules: Callable[..., Any] | None) -> None:
        """One rule per input, ``rule(tangent, *primals, outs, **attrs) -> tangents_out`` (one
        per result), or None for an input with no tangent; the contributions are summed."""
        checked = checked_rules("def_jvp_rule2", self.name, rules)
        self._jvp_rule = None
        self._jvp_rules_per_input = tuple(r and functools.partial(_with_attrs, r) for r in checked)

    def def_transpose_rule(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """``rule(cotangents, *args, outs, **attrs) -> one cotangent (or None) per input``.
        Linear inputs arrive as ``jax.interpreters.ad.UndefinedPrimal`` (test with
        ``ad.is_undefined_primal``); cotangents arrive as arrays."""
        self._transpose_rule = rule
        return rule

    @contextmanager
    def _inherit(self, backend: str | None) -> Iterator[None]:
        """Calls of this primitive inside a rule use the outer call's ``backend=``."""
        previous = getattr(self._rule_backend, "value", None)
        self._rule_backend.value = backend
        try:
            yield
        finally:
            self._rule_backend.value = previous

    def _run(self, rule: Callable[..., Any], params: Mapping[str, Any], *args: Any, outs: Any) -> Any:
        """A user rule called with the kernel's attributes alone, under the call's ``backend=``."""
        with self._inherit(params.get("backend")):
            return rule(*args, outs=outs, **_kernel_attrs(params))

    def _batch(
        self, args: Sequence[Any], axes: Sequence[Any], *, outs: tuple[Any, ...], **params: Any
    ) -> tuple[list[Any], list[Any]]:
        if self._batching_rule is not None:
            results, out_axes = self._run(self._batching_rule, params, list(args), list(axes), outs=outs)
            return list(results), list(out_axes)
        from ..calls.batching import batch_by_method

        return batch_by_method(self.name, self.primitive.bind, self._vmap_method, args, axes, outs, params)

    def _defined(self, rule: Callable[..., Any] | None, what: str, how: str) -> Callable[..., Any]:
        """``rule``, or NotImplementedError saying which rule is missing and how to define it."""
        if rule is None:
            raise NotImplementedError(f"XLACustomKernel {self.name!r} has no {what}; define one with {how}")
        return rule

    def _jvp(
        self, primals: Sequence[Any], tangents: Sequence[Any], *, outs: tuple[Any, ...], **params: Any
    ) -> tuple[list[Any], list[Any]]:
        if self._jvp_rules_per_input is not None:
            with self._inherit(params.get("backend")):
                rules, prim = self._jvp_rules_per_input, self.primitive
                out, tangents_out = per_input_jvp(rules, prim, primals, tangents, outs=outs, **params)
            return list(out), list(tangents_out)
        rule = self._defined(self._jvp_rule, "JVP rule", "op.def_jvp_rule(...) to differentiate through it")
        tangents = [ad.instantiate_zeros(t) for t in tangents]
        primals_out, tangents_out = self._run(rule, params, list(primals), tangents, outs=outs)
        return _as_list(primals_out), _as_list(tangents_out)

    def _transpose(self, cotangents: Any, *args: Any, outs: tuple[Any, ...], **params: Any) -> list[Any]:
        rule = self._defined(
            self._transpose_rule,
            "transpose rule",
            "op.def_transpose_rule(...) for reverse-mode differentiation (jax.grad, jax.vjp)",
        )
        cts = [ad.instantiate_zeros(ct) for ct in cotangents]
        result = _as_list(self._run(rule, params, cts, *args, outs=outs))
        if len(result) != len(args):
            raise KernelCallError(
                f"XLACustomKernel {self.name!r}: the transpose rule returned {len(result)} cotangent(s) "
                f"for {len(args)} input(s); return one (or None) per input",
                kernel=self.name,
            )
        return result


# -- brainevent 0.2.1's rules for any JAX primitive ------------------------------------------------


def defjvp(primitive: Any, *jvp_rules: Callable[..., Any] | None) -> None:
    """Differentiate ``primitive`` with one rule per input.

    ``rule(tangent, *primals, **params)`` returns that input's contribution to the output
    tangent (one per result, as a tuple or list, for a primitive with several results);
    ``None`` marks an input that has no tangent. Contributions are summed. A rule count that
    differs from the number of inputs is a ``ValueError`` when the primitive is differentiated.
    """
    prim = getattr(primitive, "primitive", primitive)  # an XLACustomKernel carries one
    if not isinstance(prim, Primitive):
        raise TypeError(f"defjvp needs a JAX Primitive or an XLACustomKernel, got {type(primitive).__name__}")
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
    # None: no rule gave a tangent; JAX's symbolic zero makes no array.
    found = [
        ad.Zero(jax.typeof(o).to_tangent_aval()) if t is None else t for o, t in zip(outs, total, strict=True)
    ]
    return out, found if prim.multiple_results else found[0]


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
