"""Classify a C++ parameter type as a tensor, a scalar, a stream or unmappable.

Works on the lexer's tokens of the type (not on raw text), so spacing, comments
and qualifier order (``const BE::Tensor`` vs ``BE::Tensor const``) do not matter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

# Named scalar spellings (after a leading ``::`` is dropped) and their canonical type; BE::float16
# ... and brainevent 0.2.1's BE::float16_t ... come from brainevent/half.h and dtype.h.
_NAMED_SCALARS: dict[str, str] = {"bool": "bool", "float": "float32", "double": "float64", "half": "float16"}
_NAMED_SCALARS.update(__half="float16", __nv_bfloat16="bfloat16", nv_bfloat16="bfloat16")
for _std in ("", "std::"):
    for _bits in (8, 16, 32, 64):
        _NAMED_SCALARS.update({f"{_std}int{_bits}_t": f"int{_bits}", f"{_std}uint{_bits}_t": f"uint{_bits}"})
    _NAMED_SCALARS.update(
        dict.fromkeys([f"{_std}{a}" for a in ("ptrdiff_t", "intptr_t", "ssize_t")], "int64")
    )
    _NAMED_SCALARS.update({f"{_std}size_t": "uint64", f"{_std}uintptr_t": "uint64"})
    _NAMED_SCALARS.update({f"{_std}complex<float>": "complex64", f"{_std}complex<double>": "complex128"})
for _name in ("float16", "bfloat16", "complex64", "complex128"):
    _NAMED_SCALARS[f"BE::{_name}"] = _NAMED_SCALARS[f"BE::{_name}_t"] = _name

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
    if word == ">":
        return True
    return (word[:1].isalpha() or word[:1] == "_") and word not in QUALIFIERS


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
    reference = bool(kept) and kept[-1] == "&"
    if reference:
        kept.pop()
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
