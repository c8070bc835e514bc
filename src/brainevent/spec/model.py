"""The resolved description of one kernel entry point.

A :class:`FunctionSpec` lists the C++ parameters in declaration order, each tagged
with its role (input tensor, output tensor, stream, scalar attribute, scratch memory). It is what
the code generator consumes and what ``CompiledModule`` exposes.
"""

from typing import NamedTuple

from ..vocabulary import SCALAR_TYPES, Role

__all__ = ["SCALAR_TYPES", "FunctionSpec", "Param", "Role"]


# NamedTuples, not dataclasses: a cache hit reads specs back from the manifest, and creating
# a dataclass at import costs far more. No `from __future__ import annotations` either: a
# NamedTuple compiles each string annotation of its fields, which costs more than evaluating it.


class Param(NamedTuple):
    """One C++ parameter of an entry point."""

    role: Role
    name: str  # the C++ parameter name (for attrs: the attribute name seen from Python)
    dtype: str | None = None  # canonical scalar type, attrs only
    cxx_type: str = ""  # the C++ type as written, normalised to single spaces
    scratch_bytes: int | None = None  # scratch only: the size `scratch:<bytes>` gave, if any

    def token(self) -> str:
        if self.role is Role.ATTR:
            return f"attr.{self.name}:{self.dtype}"
        if self.role is Role.SCRATCH and self.scratch_bytes is not None:
            return f"scratch:{self.scratch_bytes}"
        return self.role.value


class FunctionSpec(NamedTuple):
    """A checked entry point: its name, parameters and where it is defined."""

    name: str
    params: tuple[Param, ...]
    source_file: str = ""  # virtual or real file name where the function is defined
    line: int = 0  # 1-based line of the definition
    scope: str = ""  # enclosing namespaces, e.g. "ops"; the entry is called as ::ops::name

    @property
    def qualified_name(self) -> str:
        return f"::{self.scope}::{self.name}" if self.scope else f"::{self.name}"

    @property
    def args(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.role is Role.ARG)

    @property
    def rets(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.role is Role.RET)

    @property
    def attrs(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.role is Role.ATTR)

    @property
    def scratch(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.role is Role.SCRATCH)

    @property
    def has_stream(self) -> bool:
        return any(p.role is Role.STREAM for p in self.params)

    def tokens(self) -> list[str]:
        """The canonical arg_spec of this function (aliases resolved, attr types explicit)."""
        return [p.token() for p in self.params]
