"""Bind each arg_spec token to its C++ parameter, before compiling, so a wrong spec is reported
against the spec and the source, not as a crash at call time; or infer the arg_spec from the
parameters' types (the rules: docs/arg-spec.md, "Inference").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from brainevent.errors import SpecError
from brainevent.spec.cxx_types import ACCEPTED, CxxParam, TypeClass, classify
from brainevent.spec.model import Param, Role
from brainevent.spec.out_shape import check_out_shapes
from brainevent.spec.signature import CxxSignature
from brainevent.spec.tokens import SpecToken
from brainevent.vocabulary import unhandled

_STREAM_INTS = ("int64", "uint64")
# A 16-bit float attribute may land in a uint16_t parameter as its raw bits (brainevent
# 0.2.1 passed it so), or in a __half / __nv_bfloat16 / BE::float16_t one.
_RAW_BITS = {"float16": "uint16", "bfloat16": "uint16"}


def bind_tokens(sig: CxxSignature, tokens: Sequence[SpecToken], origin: str = "") -> tuple[Param, ...]:
    """One :class:`Param` per C++ parameter, in order; SpecError naming ``origin`` on any mismatch."""
    head = f"{sig.name} ({sig.where})" + (f", arg_spec from {origin}" if origin else "")
    if len(tokens) != len(sig.params):
        shown_params = ", ".join(p.display() for p in sig.params) or "none"
        raise SpecError(
            f"{head}: the arg_spec has {len(tokens)} token(s) "
            f"{[t.shown() for t in tokens]} but the C++ function has {len(sig.params)} "
            f"parameter(s) ({shown_params}). Fix: give exactly one token per parameter, "
            "in declaration order.",
            function=sig.name,
            expected=len(sig.params),
            got=len(tokens),
            line=sig.line,
            file=sig.file_name,
        )
    params: list[Param] = []
    for position, (tok, cparam) in enumerate(zip(tokens, sig.params, strict=True), start=1):
        cls = classify(cparam)
        problem = _mismatch(tok, cls, cparam)
        if problem is not None:
            unmappable = f"Cannot map C++ type {cparam.type!r}. " if cls.kind == "unmappable" else ""
            message = (
                f"{unmappable}{head}: token {position} {tok.shown()!r} does not fit C++ parameter "
                f"{position} `{cparam.display()}` (line {cparam.line}): expected {problem[0]}. "
                f"Fix: {problem[1]}."
            )
            raise _param_error(sig, position, cparam, message, token=tok.shown(), cxx_type=cparam.type)
        _check_attr_name(head, sig, position, tok, cparam)  # after the type: a tensor's name is no news
        if tok.role is Role.ATTR:
            params.append(Param(Role.ATTR, str(tok.attr_name), tok.dtype or cls.detail, cparam.type))
        else:  # scratch_bytes: scratch tokens only; shape: rets only; dtype: args'
            name = cparam.name or f"param{position}"
            params.append(Param(tok.role, name, tok.dtype, cparam.type, tok.scratch_bytes, tok.shape))
    check_out_shapes(head, params, sig.name)
    return tuple(params)


def _check_attr_name(head: str, sig: CxxSignature, position: int, tok: SpecToken, cparam: CxxParam) -> None:
    """An attribute is passed by name: its token must name its (named) parameter."""
    if tok.role is not Role.ATTR or not cparam.name or tok.attr_name == cparam.name:
        return
    names = [p.name for p in sig.params]
    shown_params = ", ".join(p.display() for p in sig.params)
    if tok.attr_name in names:
        where = f"'{tok.attr_name}' is parameter {names.index(tok.attr_name) + 1}, not {position}"
        fix = "put the tokens in the order of the C++ parameters"
    else:
        where = f"'{tok.attr_name}' not found in signature: the function has no such parameter"
        fix = f"write 'attr.{cparam.name}' for parameter {position}, or rename the C++ parameter"
    message = (
        f"{head}: token {position} {tok.shown()!r} names attribute '{tok.attr_name}', but C++ "
        f"parameter {position} is `{cparam.display()}` ({where}; the parameters are: {shown_params}). "
        f"Fix: {fix}."
    )
    raise _param_error(sig, position, cparam, message, token=tok.shown(), parameters=names)


def _param_error(sig: CxxSignature, position: int, cparam: CxxParam, message: str, **data: Any) -> SpecError:
    where: dict[str, Any] = {"function": sig.name, "position": position, "parameter": cparam.name}
    return SpecError(message, **where, line=cparam.line, file=sig.file_name, **data)


def _mismatch(tok: SpecToken, cls: TypeClass, cparam: CxxParam) -> tuple[str, str] | None:
    """(what was expected, how to fix it) when ``tok`` cannot bind to ``cparam``."""
    if cls.kind == "unmappable":
        return (
            f"a supported type, but {cparam.type!r} is not one ({cls.detail}); accepted: {ACCEPTED}",
            "change the C++ parameter's type",
        )
    stream_int = cls.kind == "scalar" and cls.detail in _STREAM_INTS
    raw_bits = tok.dtype is not None and _RAW_BITS.get(tok.dtype) == cls.detail
    match tok.role:
        case Role.ARG | Role.RET if cls.kind != "tensor":
            return (f"a BE::Tensor parameter for {tok.shown()!r}", _fix_for(cls, cparam))
        case Role.RET if cls.detail == "const":
            return (
                "a non-const BE::Tensor for 'ret' (outputs must be writable)",
                "drop const from the C++ parameter, or use 'arg' if it is an input",
            )
        case Role.STREAM if cls.kind != "stream" and not stream_int:
            return ("an int64_t, cudaStream_t or void* parameter for 'stream'", _fix_for(cls, cparam))
        case Role.ATTR if cls.kind != "scalar":
            return (f"a scalar parameter for {tok.shown()!r}", _fix_for(cls, cparam))
        case Role.ATTR if tok.dtype not in (None, cls.detail) and not raw_bits:
            return (
                f"type {tok.dtype} as the token says, but `{cparam.display()}` is {cls.detail}",
                f"write 'attr.{tok.attr_name}:{cls.detail}' (or bare 'attr.{tok.attr_name}'), "
                f"or change the C++ type to match {tok.dtype}",
            )
        case Role.SCRATCH if cls.kind != "scratch":
            return ("a BE::Scratch parameter for 'scratch'", _fix_for(cls, cparam))
        case Role.ARG | Role.RET | Role.STREAM | Role.ATTR | Role.SCRATCH:
            return None
        case _:
            unhandled(tok.role, "spec.bind._mismatch")


def _fix_for(cls: TypeClass, cparam: CxxParam) -> str:
    """The token that would fit this parameter, as advice."""
    token, what = {
        "tensor": ("arg" if cls.detail == "const" else "ret (or arg)", "tensor"),
        "stream": ("'stream'", "parameter"),
        "scratch": ("'scratch' (or 'scratch:<bytes>')", "BE::Scratch"),
    }.get(cls.kind, (f"'attr.{cparam.name or '<name>'}:{cls.detail}'", "scalar"))
    return f"use {token} for this {what}, or check the token order"


def infer_spec(sig: CxxSignature) -> list[SpecToken]:
    """The arg_spec a signature implies, one token per parameter, in order."""
    tokens: list[SpecToken] = []
    stream_at = 0
    for position, param in enumerate(sig.params, start=1):
        cls = classify(param)
        problem = None  # (what is wrong, how to fix it)
        # A stream by type, or an int64 whose name says it carries the stream.
        is_stream = cls.kind == "stream" or (
            cls == ("scalar", "int64") and param.name.lower().endswith("stream")
        )
        if cls.kind == "tensor":
            tokens.append(SpecToken(Role.ARG if cls.detail == "const" else Role.RET))
        elif cls.kind == "scratch":
            tokens.append(SpecToken(Role.SCRATCH))
        elif is_stream and stream_at:
            problem = (
                f"is a second stream parameter (the first is parameter {stream_at})",
                "keep one stream parameter, or rename this one so its name does not end in 'stream'",
            )
        elif is_stream:
            stream_at = position
            tokens.append(SpecToken(Role.STREAM))
        elif cls.kind == "scalar" and not param.name:
            problem = ("is an unnamed scalar, so it has no attribute name", "name the parameter")
        elif cls.kind == "scalar":
            tokens.append(SpecToken(Role.ATTR, param.name, cls.detail))
        else:
            problem = (
                f"has type {param.type!r}: {cls.detail}. Accepted: {ACCEPTED}",
                "change the parameter's type",
            )
        if problem is not None:
            message = (
                f"{sig.name} ({sig.where}): cannot infer the arg_spec: parameter {position} "
                f"`{param.display() or '(empty)'}` {problem[0]}. Fix: {problem[1]}, or give an explicit spec "
                f"(functions={{'{sig.name}': [...]}} or '// @BE {sig.name} <tokens...>')."
            )
            raise _param_error(sig, position, param, message, cxx_type=param.type)
    return tokens
