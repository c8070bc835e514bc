"""Find a function's declaration in C++ source (its parameter list is read by :mod:`cxx_types`).

Only names at namespace scope (file scope, ``namespace x {}``, ``extern "C" {}``) can declare an
entry point, so calls inside function bodies and class members are never mistaken for it. A
candidate is ``<prefix> name ( params )`` then ``{`` or ``;``, where ``<prefix>`` ends in a type.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

from brainevent.errors import SpecError
from brainevent.spec.cxx_lexer import LexResult, Token, lex
from brainevent.spec.cxx_types import CxxParam, classify_words, join_type, parse_params

# Words that may sit before a declared name but are not part of its return type.
_SPECIFIERS = frozenset(
    {"static", "inline", "extern", "__inline__", "__forceinline__", "__noinline__", "constexpr",
     "__host__", "__device__", "__global__", "__launch_bounds__"}
)  # fmt: skip
# Attribute-like words followed by a parenthesised argument, dropped with it.
_PAREN_SPECIFIERS = frozenset({"__attribute__", "__declspec", "alignas", "__launch_bounds__"})
# Identifiers that can precede ``name (`` without making it a declaration.
_NOT_TYPES = frozenset(
    {"return", "new", "delete", "throw", "case", "goto", "sizeof", "else", "do", "co_return",
     "co_yield", "co_await", "operator", "typedef", "using", "namespace", "decltype"}
)  # fmt: skip
_CLOSING = {"(": ")", "[": "]", "{": "}"}


class CxxSignature(NamedTuple):
    name: str
    return_type: str
    params: tuple[CxxParam, ...]
    line: int  # line of the function name
    file_name: str = "<source>"
    is_definition: bool = True
    kind: str = "host"  # "host", "kernel" (__global__) or "device" (__device__ only)
    is_template: bool = False
    scope: str = ""  # enclosing named namespaces, e.g. "ops::detail"; "" at file scope

    @property
    def where(self) -> str:
        return f"{self.file_name}:{self.line}"


def scan_functions(source: str | LexResult, file_name: str = "<source>") -> list[CxxSignature]:
    """Every function declared or defined at namespace scope, in source order."""
    lexed = source if isinstance(source, LexResult) else lex(source)
    return list(_Scanner(lexed.tokens, file_name).run())


def pick_one(function: str, sigs: Sequence[CxxSignature]) -> CxxSignature | None:
    """The one entry point the host declarations of ``function`` describe (a definition wins over
    declarations with its parameter types); SpecError for several definitions or differing overloads."""
    candidates = [s for s in sigs if s.name == function and s.kind == "host"]
    if not candidates:
        return None
    if len({_param_key(c) for c in candidates}) > 1:
        raise clash_error(
            function,
            candidates,
            "found overloads with different parameters at {}. An entry point must have exactly one "
            "signature; rename the other overloads.",
        )
    definitions = [c for c in candidates if c.is_definition]
    if len(definitions) > 1:
        raise clash_error(function, definitions, "defined more than once, at {}. Keep one definition.")
    chosen = definitions[0] if definitions else candidates[0]
    if chosen.is_template:
        raise SpecError(
            f"{function}: at {chosen.where} it is a function template. An entry point must be "
            "an ordinary function; wrap one instantiation in a non-template function.",
            function=function,
            line=chosen.line,
            file=chosen.file_name,
        )
    return chosen


def clash_error(function: str, sigs: Sequence[CxxSignature], problem: str) -> SpecError:
    """SpecError about several declarations of ``function``; ``{}`` in ``problem`` lists them."""
    places = ", ".join(c.where for c in sigs)
    return SpecError(
        f"{function}: {problem.format(places)}",
        function=function,
        lines=[c.line for c in sigs],
        files=[c.file_name for c in sigs],
    )


def _param_key(sig: CxxSignature) -> tuple[object, ...]:
    """Parameter types compared by meaning, so ``BE::Tensor const`` == ``const BE::Tensor``."""
    classes = [(classify_words(p.type_words), p.type) for p in sig.params]
    return tuple(cls if cls.kind != "unmappable" else text for cls, text in classes)


class _Scanner:
    def __init__(self, tokens: Sequence[Token], file_name: str) -> None:
        self.toks = tokens
        self.texts = [t.text if t.kind != "string" else '"' for t in tokens]
        self.file_name = file_name

    def run(self) -> Iterator[CxxSignature]:
        stack: list[str] = []  # "(", "[", "ns" (namespace-like brace) or "{" (any other brace)
        self.scopes: list[str] = []  # names of the open namespace-like braces ("" if unnamed)
        stmt = 0  # first token of the current namespace-scope statement
        for i, tok in enumerate(self.toks):
            t = tok.text
            at_namespace_scope = len(stack) == len(self.scopes)  # no open bracket but namespaces
            if tok.kind == "ident" and at_namespace_scope and self.texts[i + 1 : i + 2] == ["("]:
                sig = self.candidate(stmt, i)
                if sig is not None:
                    yield sig
            if tok.kind != "punct":
                continue
            if t in ("(", "["):
                stack.append(t)
            elif t in (")", "]") and stack and _CLOSING.get(stack[-1]) == t:
                stack.pop()
            elif t == "{":
                namespace = self.namespace(stmt, i) if at_namespace_scope else None
                stack.append("{" if namespace is None else "ns")
                if namespace is not None:
                    self.scopes.append(namespace)
                    stmt = i + 1
            elif t == "}":
                # Unclosed ( or [ before a } are typos; drop them so scoping recovers.
                while stack and stack[-1] in ("(", "["):
                    stack.pop()
                if stack and stack.pop() == "ns":
                    self.scopes.pop()
                if len(stack) == len(self.scopes):
                    stmt = i + 1
            elif t == ";" and at_namespace_scope:
                stmt = i + 1

    def namespace(self, start: int, brace: int) -> str | None:
        """The name a namespace-like brace opens ("a::b"; "" for anonymous and extern "C"), else None."""
        words = self.texts[start:brace]
        words = words[1:] if words[:1] == ["inline"] else words
        if words[:1] == ["namespace"]:
            return "".join(w for w in words[1:] if w.isidentifier() or w == "::")
        extern_block = [t.text for t in self.toks[start:brace]] in (["extern", '"C"'], ["extern", '"C++"'])
        return "" if extern_block else None

    def match(self, i: int) -> int | None:
        """Index of the bracket closing the one at ``i``, or None when unbalanced."""
        depth = 0
        for j in range(i, len(self.texts)):
            t = self.texts[j]
            depth += (t in _CLOSING) - (t in (")", "]", "}"))
            if depth == 0:
                return j if _CLOSING[self.texts[i]] == t else None
        return None

    def declarator_end(self, k: int) -> str | None:
        """ "def" or "decl" when what follows ``)`` ends a function declarator."""
        while self.texts[k : k + 1] and self.texts[k] not in ("{", ";", ",", "=", ")", "]", "}", ":"):
            close = self.match(k) if self.texts[k] in ("(", "[") else k
            if close is None:
                return None
            k = close + 1
        return {"{": "def", ";": "decl"}.get("".join(self.texts[k : k + 1]))

    def candidate(self, stmt: int, i: int) -> CxxSignature | None:
        if i - 1 < stmt:
            return None  # a bare ``name(...)`` statement: a macro call, not a declaration
        prev = self.toks[i - 1]
        typed = prev.kind == "ident" and prev.text not in _NOT_TYPES
        if not typed and prev.text not in ("*", "&", "&&", ">"):
            return None
        is_template, prefix = _strip_template_headers(self.texts[stmt:i])
        if prefix is None or any(w in ("=", "typedef", "using", "friend") for w in prefix):
            return None
        close = self.match(i + 1)
        end = None if close is None else self.declarator_end(close + 1)
        if close is None or end is None:
            return None
        device_only = "__device__" in prefix and "__host__" not in prefix
        kind = "kernel" if "__global__" in prefix else "device" if device_only else "host"
        return CxxSignature(
            name=self.toks[i].text,
            return_type=_return_type(prefix),
            params=parse_params(self.toks[i + 2 : close], self.toks[i].line),
            line=self.toks[i].line,
            file_name=self.file_name,
            is_definition=end == "def",
            kind=kind,
            is_template=is_template,
            scope="::".join(name for name in self.scopes if name),
        )


def _strip_template_headers(words: list[str]) -> tuple[bool, list[str] | None]:
    """Drop leading ``template <...>`` headers; None when one is unterminated."""
    is_template = words[:1] == ["template"]
    while words[:1] == ["template"]:
        if words[1:2] != ["<"]:
            words = words[1:]
            continue
        depth = paren = 0
        for j in range(1, len(words)):
            w = words[j]
            paren += (w in ("(", "[")) - (w in (")", "]"))
            if paren == 0 and w in ("<", ">"):
                depth += 1 if w == "<" else -1
                if depth == 0:
                    break
        else:
            return is_template, None
        words = words[j + 1 :]
    return is_template, words


def _return_type(prefix: list[str]) -> str:
    words: list[str] = []
    depth = 0
    after_specifier = False
    for w in prefix:
        if depth:  # inside a dropped (...) or [[...]] group
            depth += (w in ("(", "[")) - (w in (")", "]"))
        elif w == "[" or (after_specifier and w == "("):
            depth = 1  # [[attribute]], or a specifier's argument
        elif w not in _SPECIFIERS and w not in _PAREN_SPECIFIERS and w != '"':
            words.append(w)
        after_specifier = w in _PAREN_SPECIFIERS
    # A macro call before the declaration (``EXPORT(x) void f``) leaves ``( x )``.
    if ")" in words:
        words = words[len(words) - words[::-1].index(")") :]
    return join_type(words)
