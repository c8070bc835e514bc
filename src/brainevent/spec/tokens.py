"""The arg_spec token grammar (docs/arg-spec.md lists the tokens), and the ``// @BE name [tokens...]``
annotations that carry it.

Only real comments are annotations (the lexer's comment list), so ``"@BE"`` inside a string
literal or a disabled raw string is ignored. ``/* @BE name ... */`` works too, and its tokens
may span lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from brainevent.errors import SpecError
from brainevent.spec.cxx_lexer import Comment, LexResult, lex
from brainevent.spec.model import token_text
from brainevent.spec.names import CXX_KEYWORDS, TYPE_ALIASES, canonical_type, close_matches, is_c_identifier
from brainevent.spec.out_shape import MAX_FIXED_RANK, MAX_SIZE, SHAPE_FORMS, literal_problem, parse_out_shape
from brainevent.vocabulary import SCALAR_TYPES, Role

# Plain tokens (each role's name, and 0.2.1's aliases) and what they mean; attrs are apart.
_SIMPLE = {"args": Role.ARG, "rets": Role.RET, "ctx.stream": Role.STREAM}
_SIMPLE |= {r.value: r for r in Role if r is not Role.ATTR}
_ATTR_PREFIXES = ("attr", "attrs")
_INVALID = "Invalid arg_spec token: "
# What a second token of a role allowed once says.
_REPEATED = {
    Role.SCRATCH: "is a second scratch token (the first is {first}). A function takes at most one scratch "
    "buffer; take one BE::Scratch and carve it with as<T>(count, offset_bytes).",
    Role.STREAM: "is a second stream token (the first is token {first}). A function takes at most one "
    "stream; remove one of them.",
    Role.ATTR: "repeats attribute name {name!r} (already token {first}). Attribute names must be distinct; "
    "rename one of them.",
}

# What a parameterised token with a bad value is told, by its head.
_BAD_VALUE = {
    "scratch": "after 'scratch:' is not a byte count. Expected scratch:<bytes> with a non-negative decimal "
    "integer, e.g. 'scratch:4096', or a bare 'scratch' (then pass scratch_bytes= when calling).",
    "ret": f"after 'ret:' is not a result shape. Expected {SHAPE_FORMS}, e.g. 'ret:like(x)', "
    f"'ret:like(x):int32', 'ret:(n,x.shape[1]):float32:zeros' (dims: integers, integer attributes or "
    f"an input's dims, at most {MAX_FIXED_RANK}; types: {', '.join(SCALAR_TYPES)}).",
    "arg": f"after 'arg:' is not a scalar type. Expected arg:<type>, e.g. 'arg:float32' (types: "
    f"{', '.join(SCALAR_TYPES)}), or a bare 'arg' to take any dtype.",
}
_BAD_VALUE["rets"], _BAD_VALUE["args"] = _BAD_VALUE["ret"], _BAD_VALUE["arg"]

EXPECTED_TOKENS = (
    "arg, ret, stream, attr.<name>, attr.<name>:<type>, scratch, scratch:<bytes>, arg:<type>, "
    "ret:like(<input>)[:<type>], ret:(<dim>,...):<type> (each may end ':zeros'), ret:zeros "
    "(aliases: args, rets, ctx.stream, attrs.<name>[:<type>]), and the declarations "
    "vmap_method=<method> and num_batch_dims=<k>"
)


@dataclass(frozen=True)
class SpecToken:
    """One parsed arg_spec token."""

    role: Role
    attr_name: str | None = None  # attrs only
    dtype: str | None = None  # attrs (None: the C++ type decides) and args (None: any dtype)
    scratch_bytes: int | None = None  # `scratch:<bytes>` only
    shape: str | None = None  # `ret:<shape>` only: the canonical declaration (spec/out_shape.py)
    text: str = field(default="", compare=False)  # as the user wrote it, for error messages

    @property
    def canonical(self) -> str:
        """The token with aliases resolved (``attr.x:float32``, or ``attr.x`` when untyped)."""
        return token_text(self.role, self.attr_name, self.dtype, self.scratch_bytes, self.shape)

    def shown(self) -> str:
        """The token as written when known, else its canonical form."""
        return self.text or self.canonical


def parse_tokens(function: str, tokens: Sequence[str] | str) -> list[SpecToken]:
    """Parse an arg_spec (a string is split on whitespace); SpecError naming the bad token."""
    if isinstance(tokens, str):
        tokens = tokens.split()
    if not isinstance(tokens, list | tuple):
        raise SpecError(
            f"{function}: the arg_spec must be a list of token strings, "
            f"got {type(tokens).__name__} {tokens!r}. Expected tokens: {EXPECTED_TOKENS}.",
            function=function,
            token=tokens,
        )
    parsed: list[SpecToken] = []
    first: dict[object, int] = {}  # a stream, the scratch, each attribute name -> its position
    for position, raw in enumerate(tokens, start=1):
        tok = _parse_one(function, position, raw)
        key = tok.attr_name if tok.role is Role.ATTR else tok.role
        if key in first:
            data: dict[str, Any] = {"function": function, "token": raw, "position": position}
            data.update({"attribute": tok.attr_name} if tok.role is Role.ATTR else {})
            problem = _REPEATED[tok.role].format(first=first[key], name=tok.attr_name)
            raise SpecError(f"{function}: arg_spec token {position} {raw!r} {problem}", **data)
        if tok.role in _REPEATED:
            first[key] = position
        parsed.append(tok)
    return parsed


def _parse_one(function: str, position: int, raw: object) -> SpecToken:
    where = f"{function}: arg_spec token {position}"
    data: dict[str, Any] = {"function": function, "token": raw, "position": position}
    text = raw.strip() if isinstance(raw, str) else ""
    if not isinstance(raw, str):
        problem = f"must be a string, got {type(raw).__name__} {raw!r}. Expected one of: {EXPECTED_TOKENS}."
    elif not text:
        problem = f"is empty ({raw!r}). Expected one of: {EXPECTED_TOKENS}; remove the empty entry."
    elif any(ch.isspace() for ch in text):
        problem = (
            f"{raw!r} contains whitespace. Tokens are separate list items "
            f"(or whitespace-separated in one string): write {text.split()!r}."
        )
    elif text in _SIMPLE:
        return SpecToken(_SIMPLE[text], text=raw)
    else:
        return _parse_form(f"{where} {raw!r}", raw, text, data)
    raise SpecError(f"{where} {problem}", **data)


def _parse_form(where: str, raw: str, text: str, data: dict[str, Any]) -> SpecToken:
    prefix, dot, rest = text.partition(".")
    if dot and prefix in _ATTR_PREFIXES:
        return _parse_attr(where, raw, rest, data)
    head, colon, value = text.partition(":")
    if colon and head == "scratch" and value.isdigit() and value.isascii():
        too_many = f"{value} bytes is more than XLA can size (at most 2**63-1)"
        _check_size(where, too_many if int(value) > MAX_SIZE else None, data)
        return SpecToken(Role.SCRATCH, scratch_bytes=int(value), text=raw)
    if colon and head in ("arg", "args") and canonical_type(value) is not None:  # checked on every call
        return SpecToken(Role.ARG, dtype=canonical_type(value), text=raw)
    decl = parse_out_shape(value) if colon and head in ("ret", "rets") else None
    if decl is not None:  # a result whose shape (and dtype) the binding checks on every call
        _check_size(where, literal_problem(decl), data)
        return SpecToken(Role.RET, shape=decl.canonical, text=raw)
    if colon and head in _BAD_VALUE:
        raise SpecError(f"{_INVALID}{where}: {value!r} {_BAD_VALUE[head]}", **data, value=value)
    raise SpecError(
        f"{_INVALID}{where} is not a known token. Expected one of: {EXPECTED_TOKENS}." + _token_hint(text),
        **data,
    )


def _check_size(where: str, problem: str | None, data: dict[str, Any]) -> None:
    """SpecError for a literal size XLA cannot hold (it would abort the process at the call)."""
    if problem is not None:
        raise SpecError(f"{_INVALID}{where}: {problem}. Fix: declare a smaller size.", **data)


def _parse_attr(where: str, raw: str, rest: str, data: dict[str, Any]) -> SpecToken:
    name, colon, type_name = rest.partition(":")
    if not is_c_identifier(name) or name in CXX_KEYWORDS:
        raise SpecError(
            f"{where}: attribute name {name!r} is not a C identifier "
            "(a letter or '_' then letters, digits or '_', not a C++ keyword). "
            "Expected attr.<name> or attr.<name>:<type>, e.g. 'attr.scale:float32'.",
            **data,
        )
    dtype = canonical_type(type_name) if colon else None
    if colon and dtype is None:
        hint = close_matches(type_name, [*SCALAR_TYPES, *TYPE_ALIASES])
        fix = f" Or drop the type ('attr.{name}') to take it from the C++ parameter."
        fix = f" Did you mean 'attr.{name}:{hint[0]}'?" if hint else fix
        shown = repr(type_name) if type_name else "nothing"
        raise SpecError(
            f"{_INVALID}{where}: {shown} after ':' is not a known scalar type. "
            f"Expected one of: {', '.join(SCALAR_TYPES)}." + fix,
            **data,
            dtype=type_name,
        )
    return SpecToken(Role.ATTR, attr_name=name, dtype=dtype, text=raw)


def _token_hint(text: str) -> str:
    prefix, dot, rest = text.partition(".")
    if dot and prefix != "ctx" and close_matches(prefix, _ATTR_PREFIXES):
        return f" Did you mean 'attr.{rest}'?"
    matches = close_matches(text, _SIMPLE)
    return f" Did you mean {matches[0]!r}?" if matches else " Fix the token or remove it."


MARKER = "@BE"


class Annotation(NamedTuple):
    function: str
    tokens: tuple[str, ...] | None  # None when only the name follows @BE: infer the spec
    line: int
    file_name: str = "<source>"

    @property
    def where(self) -> str:
        return f"{self.file_name}:{self.line}"


def discover_annotations(
    source: str | LexResult, file_name: str = "<source>", seen: dict[str, Annotation] | None = None
) -> list[Annotation]:
    """All ``@BE`` annotations of one source, in order; SpecError for a function annotated twice."""
    lexed = source if isinstance(source, LexResult) else lex(source)
    seen = {} if seen is None else seen
    found: list[Annotation] = []
    for comment in lexed.comments:
        ann = _parse_comment(comment, file_name)
        if ann is None:
            continue
        first = seen.get(ann.function)
        if first is not None:
            places = "twice, at" if first.file_name == file_name else "in two places,"
            raise SpecError(
                f"{ann.function}: annotated {places} {first.where} and {ann.where}. "
                "Keep one '// @BE' line per function.",
                function=ann.function,
                line=ann.line,
                lines=[first.line, ann.line],
                file=file_name,
            )
        seen[ann.function] = ann
        found.append(ann)
    return found


def _parse_comment(comment: Comment, file_name: str) -> Annotation | None:
    # Doc-comment markers (///, //!, /** and leading * of block lines) are not text.
    body = comment.text.lstrip(" \t\r\n/!*")
    words = body.split()
    if not body.startswith(MARKER) or words[0] != MARKER:
        return None  # no marker, or a different word such as "@BEGIN"
    words = [w for w in words[1:] if w.strip("*") or not comment.block]  # a block's line-leading '*'
    name = words[0] if words else None
    if name is None or not is_c_identifier(name):
        what = "no function" if name is None else f"{name!r}, which is not a C identifier"
        raise SpecError(
            f"{file_name}:{comment.line}: '@BE' annotation names {what}. Write '// @BE <function> "
            "[tokens...]' with the C++ function's name, e.g. '// @BE vector_add arg arg ret stream'.",
            function=name,
            line=comment.line,
            file=file_name,
        )
    tokens = tuple(words[1:]) or None
    return Annotation(name, tokens, comment.line, file_name)
