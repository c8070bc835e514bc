"""``normalize_tokens``: an arg_spec with its aliases spelled canonically (0.2.1's public helper)."""

from __future__ import annotations

from collections.abc import Sequence

from brainevent.spec.tokens import parse_tokens


def normalize_tokens(tokens: Sequence[str] | str) -> list[str]:
    """The arg_spec ``tokens`` in canonical form: ``args`` -> ``arg``, ``rets`` -> ``ret``,
    ``ctx.stream`` -> ``stream``, ``attrs.x`` -> ``attr.x``, ``attr.x:f32`` -> ``attr.x:float32``.

    A string is split on whitespace. An unknown or malformed token raises :class:`SpecError`
    naming it (0.2.1 passed such tokens through unchanged, to fail later at load time).
    """
    return [token.canonical for token in parse_tokens("normalize_tokens", tokens)]
