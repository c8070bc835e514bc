"""The vmap, JVP and transpose rules of an ``XLACustomKernel``, and the defaults without them."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ..errors import KernelCallError

VMAP_METHODS = ("sequential", "expand_dims", "broadcast_all")
# Bind parameters that are not attributes for the kernel.
CONTROL_PARAMS = ("backend", "batch_dims")


def _kernel_attrs(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k not in CONTROL_PARAMS}


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
        for i, rule in enumerate(rules):
            if rule is not None and not callable(rule):
                raise TypeError(
                    f"def_jvp_rule2: rule {i} must be callable or None, got {type(rule).__name__}"
                )
        self._jvp_rule, self._jvp_rules_per_input = None, tuple(rules)

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

    def _batch(
        self, args: Sequence[Any], axes: Sequence[Any], *, outs: tuple[Any, ...], **params: Any
    ) -> tuple[list[Any], list[Any]]:
        if self._batching_rule is not None:
            with self._inherit(params.get("backend")):
                results, out_axes = self._batching_rule(
                    list(args), list(axes), outs=outs, **_kernel_attrs(params)
                )
            return list(results), list(out_axes)
        from ..calls.batching import batch_by_method

        return batch_by_method(self.primitive.bind, self._vmap_method, args, axes, outs, params)

    def _defined(self, rule: Callable[..., Any] | None, what: str, how: str) -> Callable[..., Any]:
        """``rule``, or NotImplementedError saying which rule is missing and how to define it."""
        if rule is None:
            raise NotImplementedError(f"XLACustomKernel {self.name!r} has no {what}; define one with {how}")
        return rule

    def _count_error(self, text: str) -> KernelCallError:
        """A rule gave (or was given) the wrong number of things: ``text`` says which."""
        return KernelCallError(f"XLACustomKernel {self.name!r}: {text}", kernel=self.name)

    def _jvp(
        self, primals: Sequence[Any], tangents: Sequence[Any], *, outs: tuple[Any, ...], **params: Any
    ) -> tuple[list[Any], list[Any]]:
        from jax.interpreters import ad

        attrs = _kernel_attrs(params)
        if self._jvp_rules_per_input is not None:
            return self._jvp_per_input(primals, tangents, outs, params)
        rule = self._defined(self._jvp_rule, "JVP rule", "op.def_jvp_rule(...) to differentiate through it")
        tangents = [ad.instantiate_zeros(t) for t in tangents]
        with self._inherit(params.get("backend")):
            primals_out, tangents_out = rule(list(primals), tangents, outs=outs, **attrs)
        return _as_list(primals_out), _as_list(tangents_out)

    def _jvp_per_input(
        self, primals: Sequence[Any], tangents: Sequence[Any], outs: tuple[Any, ...], params: dict[str, Any]
    ) -> tuple[list[Any], list[Any]]:
        from jax.interpreters import ad

        rules = self._jvp_rules_per_input or ()
        if len(rules) != len(primals):
            raise self._count_error(
                f"def_jvp_rule2 was given {len(rules)} rule(s) for {len(primals)} input(s); "
                "give one per input (None where it has no tangent)"
            )
        primals_out = list(self.primitive.bind(*primals, outs=outs, **params))
        total = [ad.Zero(o.to_tangent_aval()) for o in outs]  # no tangent where no rule contributes
        with self._inherit(params.get("backend")):
            for rule, tangent in zip(rules, tangents, strict=True):
                if rule is None or type(tangent) is ad.Zero:
                    continue
                part = _as_list(rule(tangent, *primals, outs=outs, **_kernel_attrs(params)))
                if len(part) != len(outs):
                    raise self._count_error(
                        f"a def_jvp_rule2 rule returned {len(part)} tangent(s) for {len(outs)} result(s); "
                        "return one per result"
                    )
                total = [b if type(a) is ad.Zero else a + b for a, b in zip(total, part, strict=True)]
        return primals_out, total

    def _transpose(self, cotangents: Any, *args: Any, outs: tuple[Any, ...], **params: Any) -> list[Any]:
        from jax.interpreters import ad

        rule = self._defined(
            self._transpose_rule,
            "transpose rule",
            "op.def_transpose_rule(...) for reverse-mode differentiation (jax.grad, jax.vjp)",
        )
        cts = [ad.instantiate_zeros(ct) for ct in cotangents]
        with self._inherit(params.get("backend")):
            result = _as_list(rule(cts, *args, outs=outs, **_kernel_attrs(params)))
        if len(result) != len(args):
            raise self._count_error(
                f"the transpose rule returned {len(result)} cotangent(s) for {len(args)} input(s); "
                "return one (or None) per input"
            )
        return result
