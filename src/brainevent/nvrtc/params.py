"""A ``__global__`` kernel's parameters (pointers receive the arrays, the rest are typed scalars), read
by the C++ signature reader; a template's through its name expression (``"axpy<float>"``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import KernelCallError
from ..spec.cxx_lexer import Token, lex
from ..spec.cxx_types import classify_words, join_type
from ..spec.signature import CxxSignature, scan_functions

_DROPPED = frozenset({"__restrict__", "__restrict", "restrict", "volatile", "struct", "typename"})
# __launch_bounds__(...) before the name hides the kernel from the reader: blank it out
# (same length, newlines kept, so line numbers still match).
_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\((?:[^()]|\([^()]*\))*\)")


@dataclass(frozen=True)
class KernelParam:
    name: str
    pointer: bool
    dtype: str | None  # the scalar's (or the pointee's) dtype name; None when not a plain type
    cxx_type: str


@dataclass(frozen=True)
class KernelSignature:
    params: tuple[KernelParam, ...]

    @property
    def pointers(self) -> list[KernelParam]:
        return [p for p in self.params if p.pointer]

    @property
    def scalars(self) -> list[KernelParam]:
        return [p for p in self.params if not p.pointer]


def split_name(expression: str) -> tuple[str, list[str]]:
    """``("ns::axpy", ["float", "128"])`` from ``"ns::axpy<float, 128>"``."""
    base, _, rest = expression.strip().lstrip("&").strip().partition("<")
    if rest and not rest.rstrip().endswith(">"):
        raise KernelCallError(f"name expression {expression!r} has an unclosed '<'", value=expression)
    return base.strip(), _split_top(rest)  # up to the closing '>'


def _split_top(text: str) -> list[str]:
    """The comma-separated items at bracket depth 0, up to an unmatched closing bracket."""
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += (ch in "<([") - (ch in ">)]")
        if depth < 0:
            break
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current.strip())
    return parts


def _template_params(tokens: Sequence[Token], sig: CxxSignature) -> list[tuple[str, bool]]:
    """``[(name, is_type)]`` of the template header in front of ``sig``'s declaration."""
    texts = [t.text for t in tokens]
    at_name = (i for i, t in enumerate(tokens) if (t.text, t.line) == (sig.name, sig.line))
    start = end = next((i for i in at_name if texts[i + 1 : i + 2] == ["("]), 0)
    while start > 0 and texts[start - 1] not in (";", "{", "}"):
        start -= 1
    words = texts[start:end]
    at = words.index("template") + 1 if "template" in words else 0
    if not at or words[at : at + 1] != ["<"]:
        return []
    out = []
    for group in _split_top(" ".join(words[at + 1 :])):  # up to the header's closing '>'
        head = group.partition("=")[0].split()  # without a default value
        idents = [w for w in head if w[:1].isalpha() or w[:1] == "_"]
        if idents:
            out.append((idents[-1], head[0] in ("typename", "class")))
    return out


def kernel_signature(source: str, expression: str, where: str) -> KernelSignature:
    """The parameters of the kernel ``expression`` names in ``source`` (``where`` names the
    source in errors)."""
    qualified, args = split_name(expression)
    scope, _, name = qualified.rpartition("::")
    lexed = lex(_LAUNCH_BOUNDS.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), source))
    found = scan_functions(lexed)
    kernels = [s for s in found if s.kind == "kernel"]
    matches = [s for s in kernels if s.name == name and (not scope or s.scope.endswith(scope.lstrip(":")))]
    if not matches:
        names = sorted({s.name for s in kernels})
        raise KernelCallError(
            f"no __global__ kernel named {qualified!r} in {where}; it defines {names or 'no kernel'}. "
            "name= must name a __global__ function of the source (with its template arguments for a "
            "template: name='axpy<float>')",
            kernel=qualified,
        )
    definitions = [s for s in matches if s.is_definition] or matches
    if len({tuple(p.type for p in s.params) for s in definitions}) > 1:
        raise KernelCallError(
            f"{where} overloads kernel {qualified!r} (lines {[s.line for s in definitions]}); give each "
            "kernel its own name",
            kernel=qualified,
        )
    sig = definitions[0]
    substitute: dict[str, list[str]] = {}
    if sig.is_template:
        for (param, is_type), arg in zip(_template_params(lexed.tokens, sig), args, strict=False):
            if is_type:
                substitute[param] = [t.text for t in lex(arg).tokens]
    elif args:
        raise KernelCallError(
            f"{expression!r} gives template arguments, but kernel {qualified!r} ({where}, line {sig.line}) "
            "is not a template",
            kernel=qualified,
        )
    params = tuple(_param(p.name or f"arg{i}", p.type_words, substitute) for i, p in enumerate(sig.params))
    return KernelSignature(params)


def _param(name: str, words: tuple[str, ...], substitute: dict[str, list[str]]) -> KernelParam:
    expanded = [x for w in words if w not in _DROPPED for x in substitute.get(w, [w])]
    cxx = join_type(expanded)
    pointer = "*" in expanded
    if pointer:  # typed by its pointee
        expanded = [w for w in expanded[: len(expanded) - 1 - expanded[::-1].index("*")] if w != "const"]
    cls = classify_words(expanded)  # not a scalar: refused when a value is bound to it
    return KernelParam(name, pointer, cls.detail if cls.kind == "scalar" else None, cxx)
