"""The resolved description of one kernel entry point: a :class:`FunctionSpec` lists the C++
parameters in declaration order, each tagged with its role. The code generator consumes it and
``CompiledModule`` exposes it.
"""

from __future__ import annotations

from ..records import Record
from ..vocabulary import Role

# Records, not NamedTuples or dataclasses: a cache hit reads specs back from the manifest.


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


class Param(Record):
    """One C++ parameter of an entry point."""

    __slots__ = _fields = ("role", "name", "dtype", "cxx_type", "scratch_bytes", "shape")

    def __init__(
        self,
        role: Role,
        name: str,
        dtype: str | None = None,
        cxx_type: str = "",
        scratch_bytes: int | None = None,
        shape: str | None = None,
    ) -> None:
        self.role = role
        self.name = name  # the C++ parameter name (for attrs: the attribute name seen from Python)
        self.dtype = dtype  # canonical scalar type: an attr's, or an arg's declared dtype (None: any)
        self.cxx_type = cxx_type  # the C++ type as written, normalised to single spaces
        self.scratch_bytes = scratch_bytes  # scratch only: the size `scratch:<bytes>` gave, if any
        self.shape = shape  # ret only: the declared shape (spec/out_shape.py), canonical, if any


class FunctionSpec(Record):
    """A checked entry point: its name, parameters and where it is defined."""

    __slots__ = _fields = ("name", "params", "source_file", "line", "scope", "vmap_method", "num_batch_dims")

    def __init__(
        self,
        name: str,
        params: tuple[Param, ...],
        source_file: str = "",
        line: int = 0,
        scope: str = "",
        vmap_method: str | None = None,
        num_batch_dims: int | None = None,
    ) -> None:
        self.name = name
        self.params = params
        self.source_file = source_file  # virtual or real file name where the function is defined
        self.line = line  # 1-based line of the definition
        self.scope = scope  # enclosing namespaces, e.g. "ops"; the entry is called as ::ops::name
        # Declared with the spec (spec/declarations.py): the call's defaults, settable on mod.<f>.
        self.vmap_method = vmap_method
        self.num_batch_dims = num_batch_dims

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
        options = {"vmap_method": self.vmap_method, "num_batch_dims": self.num_batch_dims}
        return [token_text(p.role, p.name, p.dtype, p.scratch_bytes, p.shape) for p in self.params] + [
            f"{key}={value}" for key, value in options.items() if value is not None
        ]
