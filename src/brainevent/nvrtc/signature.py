"""A ``__global__`` kernel's parameters, read with the project's C++ signature reader: pointers
receive the arrays, the rest are typed scalars. A template is read through its name expression
(``"axpy<float>"``), its type parameters replaced by the expression's arguments.
"""

from __future__ import annotations

import re
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
    name: str
    params: tuple[KernelParam, ...]
    line: int

    @property
    def pointers(self) -> list[KernelParam]:
        return [p for p in self.params if p.pointer]

    @property
    def scalars(self) -> list[KernelParam]:
        return [p for p in self.params if not p.pointer]


def split_name(expression: str) -> tuple[str, list[str]]:
    """``("ns::axpy", ["float", "128"])`` from ``"ns::axpy<float, 128>"``."""
    text = expression.strip().lstrip("&").strip()
    if "<" not in text:
        return text, []
    base, _, rest = text.partition("<")
    if not rest.rstrip().endswith(">"):
        raise KernelCallError(f"name expression {expression!r} has an unclosed '<'", value=expression)
    return base.strip(), _split_top(rest.rstrip()[:-1])


def _split_top(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += (ch in "<([") - (ch in ">)]")
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current.strip())
    return parts


def _blank(match: re.Match[str]) -> str:
    return "".join(c if c == "\n" else " " for c in match.group(0))


def _template_params(tokens: list[Token], sig: CxxSignature) -> list[tuple[str, bool]]:
    """``[(name, is_type)]`` of the template header in front of ``sig``'s declaration."""
    index = next(
        (
            i
            for i, t in enumerate(tokens)
            if t.text == sig.name and t.line == sig.line and i + 1 < len(tokens) and tokens[i + 1].text == "("
        ),
        None,
    )
    if index is None:
        return []
    start = index
    while start > 0 and tokens[start - 1].text not in (";", "{", "}"):
        start -= 1
    prefix = tokens[start:index]
    at = next((i for i, t in enumerate(prefix) if t.text == "template"), None)
    if at is None or at + 1 >= len(prefix) or prefix[at + 1].text != "<":
        return []
    depth, end = 0, len(prefix)
    for i in range(at + 1, len(prefix)):
        depth += (prefix[i].text == "<") - (prefix[i].text == ">")
        if depth == 0:
            end = i
            break
    groups = [group.split() for group in _split_top(" ".join(t.text for t in prefix[at + 2 : end]))]
    out = []
    for words in groups:
        head = words[: words.index("=")] if "=" in words else words
        idents = [w for w in head if w[:1].isalpha() or w[:1] == "_"]
        if idents:
            out.append((idents[-1], head[0] in ("typename", "class")))
    return out


def kernel_signature(source: str, expression: str, where: str) -> KernelSignature:
    """The parameters of the kernel ``expression`` names in ``source`` (``where`` names the
    source in errors)."""
    qualified, args = split_name(expression)
    scope, _, name = qualified.rpartition("::")
    cleaned = _LAUNCH_BOUNDS.sub(_blank, source)
    lexed = lex(cleaned)
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
        template = _template_params(list(lexed.tokens), sig)
        for (param, is_type), arg in zip(template, args, strict=False):
            if is_type:
                substitute[param] = [t.text for t in lex(arg).tokens]
    elif args:
        raise KernelCallError(
            f"{expression!r} gives template arguments, but kernel {qualified!r} ({where}, line {sig.line}) "
            "is not a template",
            kernel=qualified,
        )
    params = tuple(_param(p.name or f"arg{i}", p.type_words, substitute) for i, p in enumerate(sig.params))
    return KernelSignature(qualified, params, sig.line)


def _param(name: str, words: tuple[str, ...], substitute: dict[str, list[str]]) -> KernelParam:
    expanded: list[str] = []
    for w in words:
        if w in _DROPPED:
            continue
        expanded.extend(substitute.get(w, [w]))
    cxx = join_type(expanded)
    if "*" in expanded:
        last = len(expanded) - 1 - expanded[::-1].index("*")
        pointee = [w for w in expanded[:last] if w != "const"]
        cls = classify_words(pointee)
        return KernelParam(name, True, cls.detail if cls.kind == "scalar" else None, cxx)
    cls = classify_words(expanded)
    if cls.kind != "scalar":
        return KernelParam(name, False, None, cxx)  # refused when a value is bound to it
    return KernelParam(name, False, cls.detail, cxx)
