"""Declarations about a whole function, written among its arg_spec tokens (docs/arg-spec.md):
``vmap_method=<method>`` (how ``jax.vmap`` batches a call) and ``num_batch_dims=<k>`` (the
first ``k`` dims of every operand and result are independent problems). They are no C++
parameter, so they are split off before the tokens are bound to the signature.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from brainevent.calls.batching import METHODS
from brainevent.errors import SpecError
from brainevent.spec.names import close_matches
from brainevent.spec.out_shape import declares_zeros
from brainevent.spec.tokens import SpecToken, parse_tokens

OPTIONS = ("vmap_method", "num_batch_dims")


def parse_spec(function: str, tokens: Sequence[str] | str) -> tuple[list[SpecToken], dict[str, Any]]:
    """``(parameter tokens, {option: value})``; SpecError naming a bad declaration."""
    if isinstance(tokens, str):
        tokens = tokens.split()
    if not isinstance(tokens, list | tuple):
        return parse_tokens(function, tokens), {}  # parse_tokens names the wrong type
    options: dict[str, Any] = {}
    rest = []
    for position, raw in enumerate(tokens, start=1):
        if not (isinstance(raw, str) and "=" in raw):
            rest.append(raw)
            continue
        key, _, value = raw.strip().partition("=")
        data: dict[str, Any] = {"function": function, "token": raw, "position": position}
        where = f"{function}: arg_spec token {position} {raw!r}"
        if key not in OPTIONS:
            hint = close_matches(key, OPTIONS)
            fix = f"Did you mean '{hint[0]}={value}'?" if hint else f"Declare one of: {', '.join(OPTIONS)}."
            raise SpecError(f"{where} declares unknown {key!r}. {fix}", **data)
        if key in options:
            raise SpecError(f"{where} declares {key} a second time; keep one.", **data)
        options[key] = _value(where, key, value, data)
    parsed = parse_tokens(function, rest)
    zeroed = [t.shown() for t in parsed if declares_zeros(t.shape)]
    if zeroed and options.get("vmap_method") == "expand_dims":
        raise SpecError(
            f"{function}: {zeroed[0]!r} is passed in aliased to its result, which vmap_method=expand_dims "
            "cannot batch (an unbatched input gets a batch dim of 1, the result the whole batch). "
            "Fix: declare vmap_method=broadcast_all or vmap_method=sequential.",
            function=function,
            token=zeroed[0],
        )
    return parsed, options


def normalize_tokens(tokens: Sequence[str] | str) -> list[str]:
    """The arg_spec ``tokens`` in canonical form: ``args`` -> ``arg``, ``rets`` -> ``ret``,
    ``ctx.stream`` -> ``stream``, ``attrs.x`` -> ``attr.x``, ``attr.x:f32`` -> ``attr.x:float32``,
    declarations last (0.2.1's public helper). A string is split on whitespace; an unknown or
    malformed token raises :class:`SpecError` naming it (0.2.1 passed it through, to fail later
    at load time).
    """
    parsed, options = parse_spec("normalize_tokens", tokens)
    return [token.canonical for token in parsed] + [f"{key}={value}" for key, value in options.items()]


def _value(where: str, key: str, value: str, data: dict[str, Any]) -> Any:
    if key == "vmap_method":
        if value not in METHODS:
            hint = close_matches(value, METHODS)
            fix = f" Did you mean 'vmap_method={hint[0]}'?" if hint else ""
            expected = f"Expected one of: {', '.join(METHODS)}."
            raise SpecError(f"{where}: {value!r} is not a vmap method. {expected}{fix}", **data)
        return value
    if not (value.isascii() and value.isdigit() and int(value) >= 1):
        raise SpecError(f"{where}: num_batch_dims takes a positive integer, e.g. 'num_batch_dims=1'.", **data)
    return int(value)
