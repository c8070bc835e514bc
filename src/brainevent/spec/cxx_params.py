"""Read one C++ parameter list (:mod:`signature` finds it): split it at top-level commas, drop
defaults and ``[[...]]`` attributes, and tell each parameter's name from its type.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from brainevent.spec.cxx_lexer import Token
from brainevent.spec.cxx_types import QUALIFIERS, join_type

# Words that end a parameter's type rather than naming it.
_TYPE_WORDS = frozenset(
    {"void", "bool", "char", "char8_t", "char16_t", "char32_t", "wchar_t", "short", "int",
     "long", "signed", "unsigned", "float", "double", "auto", "const", "volatile",
     "__restrict__", "__restrict"}
)  # fmt: skip


@dataclass(frozen=True)
class CxxParam:
    name: str  # "" for an unnamed parameter
    type: str  # the type as written, normalised to single spaces
    line: int
    type_words: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def display(self) -> str:
        return f"{self.type} {self.name}".strip()


def _split_top_level(tokens: Sequence[Token]) -> list[list[Token]]:
    """The parameters' tokens, split at top-level commas, without their default values."""
    groups: list[list[Token]] = [[]]
    depth = angle = 0
    defaulted = False  # after '=', '<' may be less-than, so stop counting angles
    for tok in tokens:
        t = tok.text if tok.kind == "punct" else ""
        if t in ("(", "[", "{"):
            depth += 1
        elif t in (")", "]", "}"):
            depth = max(depth - 1, 0)
        elif depth == 0 and not defaulted and t in ("<", ">"):
            angle = max(angle + (1 if t == "<" else -1), 0)
        elif depth == 0 and angle == 0 and t == "=":
            defaulted = True
        elif depth == 0 and angle == 0 and t == ",":
            groups.append([])
            defaulted = False
            continue
        if not defaulted:
            groups[-1].append(tok)
    return groups


def parse_params(tokens: Sequence[Token], fallback_line: int) -> tuple[CxxParam, ...]:
    """The parameters between a declaration's parentheses (``()`` and ``(void)`` give none)."""
    groups = _split_top_level(tokens)
    if len(groups) == 1 and [t.text for t in groups[0]] in ([], ["void"]):
        return ()
    return tuple(_parse_param(g, fallback_line) for g in groups)


def _parse_param(tokens: list[Token], fallback_line: int) -> CxxParam:
    tokens = _without_attributes(tokens)
    texts = [t.text for t in tokens]
    name_at = _name_index(tokens)
    if name_at is None:
        return CxxParam("", join_type(texts), tokens[0].line if tokens else fallback_line, tuple(texts))
    type_words = tuple(texts[:name_at] + texts[name_at + 1 :])
    return CxxParam(texts[name_at], join_type(type_words), tokens[name_at].line, type_words)


def _without_attributes(tokens: list[Token]) -> list[Token]:
    """Drop ``[[...]]`` attributes, keeping array brackets ``[N]``."""
    texts = [t.text for t in tokens]
    out: list[Token] = []
    k = 0
    while k < len(tokens):
        if texts[k : k + 2] == ["[", "["]:
            ends = (e for e in range(k + 2, len(texts) - 1) if texts[e : e + 2] == ["]", "]"])
            k = next(ends, max(k + 2, len(texts) - 1)) + 2
        else:
            out.append(tokens[k])
            k += 1
    return out


def _name_index(tokens: list[Token]) -> int | None:
    """Index of the token naming the parameter, or None when it is unnamed."""
    if not tokens:
        return None
    texts = [t.text for t in tokens]
    for k in range(2, len(tokens)):
        # Function pointer ``void (*cb)(int)``: the name follows ``(*`` .
        if tokens[k].kind == "ident" and texts[k - 1] in ("*", "&", "^") and texts[k - 2] == "(":
            return k
    last = len(tokens) - 1
    while last >= 0 and texts[last] == "]":
        # Array parameter ``float x[4]``: step back over each [..] group.
        depth = 0
        for k in range(last, -1, -1):
            depth += (texts[k] == "]") - (texts[k] == "[")
            if depth == 0:
                last = k - 1
                break
        else:
            return None
    if last < 1 or tokens[last].kind != "ident" or texts[last] in _TYPE_WORDS:
        return None
    if texts[last - 1] == "::":
        return None
    rest = [w for k, w in enumerate(texts) if k != last and w not in QUALIFIERS]
    return last if rest else None
