"""Infer an arg_spec from a C++ signature.

Rules: ``const BE::Tensor`` -> arg, non-const ``BE::Tensor`` -> ret, a
``cudaStream_t`` / ``void*`` parameter or a 64-bit signed integer whose name
ends in ``stream`` -> stream (at most one), any other scalar ->
``attr.<param name>:<type>``, ``BE::Scratch`` -> scratch (its size is then given at the
call, ``scratch_bytes=``). Anything else cannot be inferred.
"""

from __future__ import annotations

from brainevent.errors import SpecError
from brainevent.spec.cxx_types import ACCEPTED, TypeClass
from brainevent.spec.model import Role
from brainevent.spec.signature import CxxParam, CxxSignature, classify
from brainevent.spec.tokens import SpecToken


def is_stream_param(param: CxxParam, cls: TypeClass) -> bool:
    """A stream by type, or an int64 whose name says it carries the stream."""
    if cls.kind == "stream":
        return True
    return cls == ("scalar", "int64") and param.name.lower().endswith("stream")


def infer_spec(sig: CxxSignature) -> list[SpecToken]:
    """The arg_spec a signature implies, one token per parameter, in order."""
    tokens: list[SpecToken] = []
    stream_at = 0
    for position, param in enumerate(sig.params, start=1):
        cls = classify(param)
        problem = None  # (what is wrong, how to fix it)
        if cls.kind == "tensor":
            role = Role.ARG if cls.detail == "const" else Role.RET
            tokens.append(SpecToken(role, text=role.value))
        elif cls.kind == "scratch":
            tokens.append(SpecToken(Role.SCRATCH, text="scratch"))
        elif is_stream_param(param, cls) and stream_at:
            problem = (
                f"is a second stream parameter (the first is parameter {stream_at})",
                "keep one stream parameter, or rename this one so its name does not end in 'stream'",
            )
        elif is_stream_param(param, cls):
            stream_at = position
            tokens.append(SpecToken(Role.STREAM, text="stream"))
        elif cls.kind == "scalar" and not param.name:
            problem = ("is an unnamed scalar, so it has no attribute name", "name the parameter")
        elif cls.kind == "scalar":
            tokens.append(
                SpecToken(Role.ATTR, param.name, cls.detail, text=f"attr.{param.name}:{cls.detail}")
            )
        else:
            problem = (
                f"has type {param.type!r}: {cls.detail}. Accepted: {ACCEPTED}",
                "change the parameter's type",
            )
        if problem is not None:
            raise _error(sig, position, param, *problem)
    return tokens


def _error(sig: CxxSignature, position: int, param: CxxParam, problem: str, fix: str) -> SpecError:
    shown = param.display() or "(empty)"
    return SpecError(
        f"{sig.name} ({sig.where}): cannot infer the arg_spec: parameter {position} "
        f"`{shown}` {problem}. Fix: {fix}, or give an explicit spec "
        f"(functions={{'{sig.name}': [...]}} or '// @BE {sig.name} <tokens...>').",
        function=sig.name,
        parameter=param.name,
        cxx_type=param.type,
        position=position,
        line=param.line,
        file=sig.file_name,
    )
