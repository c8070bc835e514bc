"""The resolved description of one kernel entry point: a :class:`FunctionSpec` lists the C++
parameters in declaration order, each tagged with its role. The code generator consumes it and
``CompiledModule`` exposes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..vocabulary import Role


def token_text(
    role: Role, name: str | None, dtype: str | None, scratch_bytes: int | None, shape: str | None
) -> str:
    """The canonical arg_spec token of one parameter (``attr.x`` alone when its type is open)."""
    if role is Role.ATTR:
        return f"attr.{name}:{dtype}" if dtype else f"attr.{name}"
    if role is Role.ARG and dtype is not None:
        return f"arg:{dtype}"
    if role is Role.SCRATCH and scratch_bytes is not None:
        return f"scratch:{scratch_bytes}"
    if role is Role.RET and shape is not None:
        return f"ret:{shape}"
    return role.value


@dataclass(frozen=True, slots=True)
class Param:
    """One C++ parameter of an entry point."""

    role: Role
    name: str  # the C++ parameter name (for attrs: the attribute name seen from Python)
    dtype: str | None = None  # canonical scalar type: an attr's, or an arg's declared dtype (None: any)
    cxx_type: str = ""  # the C++ type as written, normalised to single spaces
    scratch_bytes: int | None = None  # scratch only: the size `scratch:<bytes>` gave, if any
    shape: str | None = None  # ret only: the declared shape (spec/out_shape.py), canonical, if any


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    """A checked entry point: its name, parameters and where it is defined."""

    name: str
    params: tuple[Param, ...]
    source_file: str = ""  # virtual or real file name where the function is defined
    line: int = 0  # 1-based line of the definition
    scope: str = ""  # enclosing namespaces, e.g. "ops"; the entry is called as ::ops::name
    # Declared with the spec (spec/declarations.py): the call's defaults, settable on mod.<f>.
    vmap_method: str | None = None
    num_batch_dims: int | None = None

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

    def tokens(self) -> list[str]:
        """The canonical arg_spec of this function (aliases resolved, attr types explicit)."""
        options = {"vmap_method": self.vmap_method, "num_batch_dims": self.num_batch_dims}
        return [token_text(p.role, p.name, p.dtype, p.scratch_bytes, p.shape) for p in self.params] + [
            f"{key}={value}" for key, value in options.items() if value is not None
        ]
