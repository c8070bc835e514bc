"""The arg_spec token grammar.

An arg_spec lists one token per C++ parameter, in order::

    arg                      an input tensor          (alias: args)
    ret                      an output tensor         (alias: rets)
    stream                   the CUDA stream          (alias: ctx.stream)
    attr.<name>              a scalar attribute       (alias: attrs.<name>)
    attr.<name>:<type>       ... with its type stated (alias: attrs.<name>:<type>)
    scratch                  workspace memory XLA allocates per call (a BE::Scratch)
    scratch:<bytes>          ... with its default size in bytes

``<type>`` is a canonical name from :data:`SCALAR_TYPES` or one of the aliases in
:data:`TYPE_ALIASES`. A bare ``attr.<name>`` takes its type from the C++ parameter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from brainevent.errors import SpecError
from brainevent.spec.names import CXX_KEYWORDS, close_matches, is_c_identifier
from brainevent.vocabulary import SCALAR_TYPES, Role

# Plain tokens and what they mean; the attr forms are handled apart.
_SIMPLE: dict[str, Role] = {
    "arg": Role.ARG,
    "args": Role.ARG,
    "ret": Role.RET,
    "rets": Role.RET,
    "stream": Role.STREAM,
    "ctx.stream": Role.STREAM,
    "scratch": Role.SCRATCH,
}
_ATTR_PREFIXES = ("attr", "attrs")

# Extra spellings accepted after ``attr.<name>:``; values are canonical names.
TYPE_ALIASES: dict[str, str] = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "int": "int32",
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "c64": "complex64",
    "c128": "complex128",
    "int8_t": "int8",
    "int16_t": "int16",
    "int32_t": "int32",
    "int64_t": "int64",
    "uint8_t": "uint8",
    "uint16_t": "uint16",
    "uint32_t": "uint32",
    "uint64_t": "uint64",
}

EXPECTED_TOKENS = (
    "arg, ret, stream, attr.<name>, attr.<name>:<type>, scratch, scratch:<bytes>, "
    "ret:like(<input>)[:<type>] or ret:(<dim>,...):<type> "
    "(aliases: args, rets, ctx.stream, attrs.<name>[:<type>])"
)


@dataclass(frozen=True)
class SpecToken:
    """One parsed arg_spec token. ``attr_name``/``dtype`` are set for attrs only;
    ``dtype`` is None for a bare ``attr.<name>`` (the C++ type decides)."""

    role: Role
    attr_name: str | None = None
    dtype: str | None = None
    scratch_bytes: int | None = None  # `scratch:<bytes>` only
    shape: str | None = None  # `ret:<shape>` only: the canonical declaration (spec/out_shape.py)
    # The token as the user wrote it, kept for error messages only.
    text: str = field(default="", compare=False)

    @property
    def canonical(self) -> str:
        """The token with aliases resolved (``attr.x:float32``, or ``attr.x`` when untyped)."""
        if self.role is Role.ATTR:
            suffix = f":{self.dtype}" if self.dtype else ""
            return f"attr.{self.attr_name}{suffix}"
        if self.role is Role.SCRATCH and self.scratch_bytes is not None:
            return f"scratch:{self.scratch_bytes}"
        if self.role is Role.RET and self.shape is not None:
            return f"ret:{self.shape}"
        return self.role.value

    def shown(self) -> str:
        """The token as written when known, else its canonical form."""
        return self.text or self.canonical


def canonical_type(name: str) -> str | None:
    """The canonical scalar type for a type name or alias, or None when unknown."""
    if name in SCALAR_TYPES:
        return name
    return TYPE_ALIASES.get(name)


def parse_tokens(function: str, tokens: Sequence[str] | str) -> list[SpecToken]:
    """Parse an arg_spec; a single string is split on whitespace.

    Raises SpecError naming the function and the offending token.
    """
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
    seen_attrs: dict[str, int] = {}
    stream_at = 0
    scratch_at = 0
    for position, raw in enumerate(tokens, start=1):
        tok = _parse_one(function, position, raw)
        if tok.role is Role.SCRATCH:
            if scratch_at:
                raise SpecError(
                    f"{function}: arg_spec token {position} {raw!r} is a second scratch token "
                    f"(the first is {scratch_at}). A function takes at most one scratch buffer; "
                    "take one BE::Scratch and carve it with as<T>(count, offset_bytes).",
                    function=function,
                    token=raw,
                    position=position,
                )
            scratch_at = position
        if tok.role is Role.STREAM:
            if stream_at:
                raise SpecError(
                    f"{function}: arg_spec token {position} {raw!r} is a second stream token "
                    f"(the first is token {stream_at}). A function takes at most one stream; "
                    "remove one of them.",
                    function=function,
                    token=raw,
                    position=position,
                )
            stream_at = position
        if tok.role is Role.ATTR:
            assert tok.attr_name is not None
            if tok.attr_name in seen_attrs:
                raise SpecError(
                    f"{function}: arg_spec token {position} {raw!r} repeats attribute name "
                    f"{tok.attr_name!r} (already token {seen_attrs[tok.attr_name]}). "
                    "Attribute names must be distinct; rename one of them.",
                    function=function,
                    token=raw,
                    position=position,
                    attribute=tok.attr_name,
                )
            seen_attrs[tok.attr_name] = position
        parsed.append(tok)
    return parsed


def _parse_one(function: str, position: int, raw: object) -> SpecToken:
    where = f"{function}: arg_spec token {position}"
    if not isinstance(raw, str):
        raise SpecError(
            f"{where} must be a string, got {type(raw).__name__} {raw!r}. "
            f"Expected one of: {EXPECTED_TOKENS}.",
            function=function,
            token=raw,
            position=position,
        )
    text = raw.strip()
    if not text:
        raise SpecError(
            f"{where} is empty ({raw!r}). Expected one of: {EXPECTED_TOKENS}; remove the empty entry.",
            function=function,
            token=raw,
            position=position,
        )
    if any(ch.isspace() for ch in text):
        raise SpecError(
            f"{where} {raw!r} contains whitespace. Tokens are separate list items "
            f"(or whitespace-separated in one string): write {text.split()!r}.",
            function=function,
            token=raw,
            position=position,
        )
    if text in _SIMPLE:
        return SpecToken(_SIMPLE[text], text=raw)
    prefix, dot, rest = text.partition(".")
    if dot and prefix in _ATTR_PREFIXES:
        return _parse_attr(where, function, position, raw, rest)
    head, colon, size = text.partition(":")
    if colon and head == "scratch":
        return SpecToken(
            Role.SCRATCH, scratch_bytes=_scratch_size(where, function, position, raw, size), text=raw
        )
    if colon and head in ("ret", "rets"):
        return _parse_ret_shape(where, function, position, raw, size)
    raise SpecError(
        f"Invalid arg_spec token: {where} {raw!r} is not a known token. Expected one of: {EXPECTED_TOKENS}."
        + _token_hint(text),
        function=function,
        token=raw,
        position=position,
    )


def _parse_attr(where: str, function: str, position: int, raw: str, rest: str) -> SpecToken:
    name, colon, type_name = rest.partition(":")
    data: dict[str, Any] = {"function": function, "token": raw, "position": position}
    if not is_c_identifier(name) or name in CXX_KEYWORDS:
        raise SpecError(
            f"{where} {raw!r}: attribute name {name!r} is not a C identifier "
            "(a letter or '_' then letters, digits or '_', not a C++ keyword). "
            "Expected attr.<name> or attr.<name>:<type>, e.g. 'attr.scale:float32'.",
            **data,
        )
    if not colon:
        return SpecToken(Role.ATTR, attr_name=name, text=raw)
    dtype = canonical_type(type_name)
    if dtype is None:
        known = list(SCALAR_TYPES) + list(TYPE_ALIASES)
        hint = close_matches(type_name, known)
        fix = (
            f" Did you mean 'attr.{name}:{hint[0]}'?"
            if hint
            else f" Or drop the type ('attr.{name}') to take it from the C++ parameter."
        )
        shown = repr(type_name) if type_name else "nothing"
        raise SpecError(
            f"Invalid arg_spec token: {where} {raw!r}: {shown} after ':' is not a known scalar type. "
            f"Expected one of: {', '.join(SCALAR_TYPES)}." + fix,
            **data,
            dtype=type_name,
        )
    return SpecToken(Role.ATTR, attr_name=name, dtype=dtype, text=raw)


def _parse_ret_shape(where: str, function: str, position: int, raw: str, text: str) -> SpecToken:
    """``ret:<shape>``: a result whose shape (and dtype) the binding checks on every call."""
    from brainevent.spec.out_shape import MAX_FIXED_RANK, SHAPE_FORMS, parse_out_shape

    decl = parse_out_shape(text)
    if decl is None:
        raise SpecError(
            f"Invalid arg_spec token: {where} {raw!r}: {text!r} after 'ret:' is not a result shape. "
            f"Expected {SHAPE_FORMS}, e.g. 'ret:like(x)', 'ret:like(x):int32', 'ret:(n,4):float32' "
            f"(dims: integers or integer attributes, at most {MAX_FIXED_RANK}; types: "
            f"{', '.join(SCALAR_TYPES)}).",
            function=function,
            token=raw,
            position=position,
            value=text,
        )
    return SpecToken(Role.RET, shape=decl.canonical, text=raw)


def _scratch_size(where: str, function: str, position: int, raw: str, size: str) -> int:
    """The byte count of ``scratch:<bytes>``: a non-negative decimal integer."""
    if not size.isdigit() or not size.isascii():
        raise SpecError(
            f"Invalid arg_spec token: {where} {raw!r}: {size!r} after 'scratch:' is not a byte count. "
            "Expected scratch:<bytes> with a non-negative decimal integer, e.g. 'scratch:4096', "
            "or a bare 'scratch' (then pass scratch_bytes= when calling).",
            function=function,
            token=raw,
            position=position,
            value=size,
        )
    return int(size)


def _token_hint(text: str) -> str:
    """Suggest the intended token for a typo such as ``atr.x`` or ``agr``."""
    prefix, dot, rest = text.partition(".")
    if dot and prefix != "ctx" and close_matches(prefix, _ATTR_PREFIXES):
        return f" Did you mean 'attr.{rest}'?"
    matches = close_matches(text, _SIMPLE)
    if matches:
        return f" Did you mean {matches[0]!r}?"
    return " Fix the token or remove it."
