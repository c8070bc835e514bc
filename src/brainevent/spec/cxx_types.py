"""One C++ parameter list: each parameter's name told from its type, and the type classified (a
tensor, a scalar, a stream, scratch memory or unmappable) from the lexer's tokens, so spacing,
comments and qualifier order (``const BE::Tensor`` vs ``BE::Tensor const``) do not matter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from brainevent.spec.cxx_lexer import Token, lex

# Named scalar spellings (after a leading ``::`` is dropped): <cstdint>/<cstddef> names and complex, with
# or without std::, CUDA's half types, BE::float16 ... and 0.2.1's BE::float16_t ... (half.h, dtype.h).
_STD_SCALARS = {f"{u}int{b}_t": f"{u}int{b}" for u in ("", "u") for b in (8, 16, 32, 64)}
_STD_SCALARS |= dict.fromkeys(("ptrdiff_t", "intptr_t", "ssize_t"), "int64")
_STD_SCALARS |= {"size_t": "uint64", "uintptr_t": "uint64", "complex<float>": "complex64"}
_STD_SCALARS |= {"complex<double>": "complex128"}
_NAMED_SCALARS = {"bool": "bool", "float": "float32", "double": "float64", "half": "float16"}
_NAMED_SCALARS |= {"__half": "float16", "__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16"}
_NAMED_SCALARS |= _STD_SCALARS | {f"std::{k}": v for k, v in _STD_SCALARS.items()}
_BE = ("float16", "bfloat16", "complex64", "complex128")
_NAMED_SCALARS |= {f"BE::{n}{s}": n for n in _BE for s in ("", "_t")}

QUALIFIERS = frozenset({"const", "volatile", "typename", "struct", "class", "enum"})
# The builtin integers spelled with keywords, in any order (sorted words -> canonical type);
# plain char is left out: its signedness is implementation-defined.
_INT_KEYWORDS: dict[tuple[str, ...], str] = {}
for _sign, _u in (("", ""), ("signed", ""), ("unsigned", "u")):
    for _words, _bits in (("", 32), ("char", 8), ("short", 16), ("int", 32), ("long", 64), ("long long", 64)):
        for _int in ("", " int") if _words not in ("", "int", "char") else ("",):  # short int, long int
            if _sign or _words not in ("", "char"):
                _INT_KEYWORDS[tuple(sorted(f"{_sign} {_words}{_int}".split()))] = f"{_u}int{_bits}"

ACCEPTED = (
    "BE::Tensor (const for an input, non-const for an output; by value or &), "
    "a scalar by value or const& (bool, int8_t..int64_t, uint8_t..uint64_t, int, long, "
    "unsigned, size_t, half, __nv_bfloat16, float, double, std::complex<float>, "
    "std::complex<double>), int64_t / cudaStream_t / void* for the stream, "
    "or BE::Scratch (by value or const&) for scratch memory"
)


class TypeClass(NamedTuple):
    """``kind`` is "tensor", "scalar", "stream", "scratch" or "unmappable". ``detail`` is
    "const"/"mutable" for tensors, the canonical dtype for scalars, the C++ type
    for streams and the reason for unmappable types."""

    kind: str
    detail: str


def join_type(words: Sequence[str]) -> str:
    """Render type tokens as text with single spaces where C++ style puts them."""
    out = prev = ""
    for w in words:
        glue = (
            not out
            or w in {",", ")", "[", "]", "<", ">", "*", "&", "&&"}
            or (w == "(" and prev == ")")
            or prev in {"::", "<", "(", "["}
            or (w == "::" and _names_something(prev))
        )
        out += w if glue else " " + w
        prev = w
    return out


def _names_something(word: str) -> bool:
    """True when ``word`` can be the scope left of ``::`` (a name or a template's ``>``)."""
    return word == ">" or ((word[:1].isalpha() or word[:1] == "_") and word not in QUALIFIERS)


def classify_words(words: Sequence[str]) -> TypeClass:
    """Classify a type given as its token texts, e.g. ``["const", "BE", "::", "Tensor", "&"]``."""
    words = list(words)
    if not words:
        return TypeClass("unmappable", "the parameter has no type")
    is_const = False
    depth = 0
    kept: list[str] = []
    for w in words:
        depth += (w == "<") - (w == ">")
        if w == "const" and depth == 0:
            is_const = True  # top-level const only changes tensor direction
            continue
        kept.append(w)
    if "volatile" in kept:
        return TypeClass("unmappable", "volatile parameters are not supported")
    reference = kept[-1:] == ["&"]
    kept = kept[:-1] if reference else kept
    if "&&" in kept or "&" in kept:
        return TypeClass("unmappable", "rvalue references and nested references are not supported")
    # Drop a global-scope ``::`` in front of a qualified name (``::BE::Tensor``).
    kept = [
        w for k, w in enumerate(kept) if not (w == "::" and not _names_something(kept[k - 1] if k else ""))
    ]
    if "[" in kept:
        return TypeClass("unmappable", "arrays are not accepted (pass a BE::Tensor instead)")
    if "*" in kept:
        if kept == ["void", "*"] and not reference:
            return TypeClass("stream", "void*")
        return TypeClass("unmappable", "pointers are not accepted (pass a BE::Tensor instead)")
    key = join_type(kept)
    if key == "BE::Tensor":
        return TypeClass("tensor", "const" if is_const else "mutable")
    if key == "BE::Scratch":
        if reference and not is_const:
            return TypeClass("unmappable", "take BE::Scratch by value or const&, not by non-const reference")
        return TypeClass("scratch", key)
    if key == "cudaStream_t":
        if reference:
            return TypeClass("unmappable", "take the stream by value, not by reference")
        return TypeClass("stream", key)
    dtype = _NAMED_SCALARS.get(key) or _INT_KEYWORDS.get(tuple(sorted(kept)))
    if dtype is None:
        return TypeClass("unmappable", _unknown_reason(kept))
    if reference and not is_const:
        return TypeClass("unmappable", "a non-const reference to a scalar; take it by value or by const&")
    return TypeClass("scalar", dtype)


def _unknown_reason(words: list[str]) -> str:
    if words == ["char"]:
        return "plain char has implementation-defined signedness; use int8_t or uint8_t"
    if words and words[-1] == "Tensor":
        return "only BE::Tensor is recognised as a tensor; spell it BE::Tensor"
    if "long" in words and "double" in words:
        return "long double has no XLA equivalent; use double"
    return "this type has no matching JAX operand or attribute type"


def classify(param: CxxParam | str) -> TypeClass:
    """Classify a parameter (or a type given as text) as tensor/scalar/stream/unmappable."""
    words = param.type_words if isinstance(param, CxxParam) else [t.text for t in lex(param).tokens]
    return classify_words(words)


# Words that end a parameter's type rather than naming it.
_TYPE_WORDS = frozenset(
    {"void", "bool", "char", "char8_t", "char16_t", "char32_t", "wchar_t", "short", "int",
     "long", "signed", "unsigned", "float", "double", "auto", "const", "volatile",
     "__restrict__", "__restrict"}
)  # fmt: skip


class CxxParam(NamedTuple):
    name: str  # "" for an unnamed parameter
    line: int
    type_words: tuple[str, ...]

    @property
    def type(self) -> str:
        """The type as written, normalised to single spaces."""
        return join_type(self.type_words)

    def display(self) -> str:
        return f"{self.type} {self.name}".strip()


def parse_params(tokens: Sequence[Token], fallback_line: int) -> tuple[CxxParam, ...]:
    """The parameters between a declaration's parentheses (``()`` and ``(void)`` give none)."""
    groups = _split_top_level(tokens)
    if len(groups) == 1 and [t.text for t in groups[0]] in ([], ["void"]):
        return ()
    return tuple(_parse_param(g, fallback_line) for g in groups)


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


def _parse_param(tokens: list[Token], fallback_line: int) -> CxxParam:
    tokens = _without_attributes(tokens)
    texts = [t.text for t in tokens]
    k = _name_index(tokens)
    if k is None:
        return CxxParam("", tokens[0].line if tokens else fallback_line, tuple(texts))
    return CxxParam(texts[k], tokens[k].line, tuple(texts[:k] + texts[k + 1 :]))


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
    texts = [t.text for t in tokens]
    for k in range(2, len(tokens)):
        # Function pointer ``void (*cb)(int)``: the name follows ``(*`` .
        if tokens[k].kind == "ident" and texts[k - 1] in ("*", "&", "^") and texts[k - 2] == "(":
            return k
    last, depth = len(tokens) - 1, 0
    while last >= 0 and (depth or texts[last] == "]"):  # array parameter ``float x[4]``: skip [..]
        depth += (texts[last] == "]") - (texts[last] == "[")
        last -= 1
    if depth or last < 1 or tokens[last].kind != "ident" or texts[last] in _TYPE_WORDS:
        return None
    if texts[last - 1] == "::":
        return None
    rest = [w for k, w in enumerate(texts) if k != last and w not in QUALIFIERS]
    return last if rest else None
