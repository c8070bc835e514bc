"""The binding vocabulary: the words that Python and the generated C++ must agree on.

Parameter roles, scalar types and the binding's platform tags, defined once (exported symbol
names: :mod:`brainevent.headers`). The C++ headers spell the same values
(``BE::DType`` in ``brainevent/dtype.h``, ``BE::ffi::Role`` and ``BE::ffi::Platform`` in
``brainevent/ffi_function.h``), and a test checks them against this module. Every lookup
raises on a value it does not know, so a value added on one side only fails loudly.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Never, NoReturn

from .platform_table import BUILD_PLATFORMS


class Role(str, Enum):  # noqa: UP042 - keep str(Role.ARG) as other modules expect
    """What one C++ parameter of an entry point receives."""

    ARG = "arg"  # an input tensor
    RET = "ret"  # an output tensor
    STREAM = "stream"  # the platform's stream handle (0 on CPU)
    ATTR = "attr"  # a named scalar attribute
    SCRATCH = "scratch"  # workspace memory XLA allocates per call (an extra, discarded result)


# The C++ spelling and value of each role in ``enum class BE::ffi::Role`` (declaration order).
ROLE_ENUM: dict[Role, tuple[str, int]] = {role: (role.name.title(), i) for i, role in enumerate(Role)}


@dataclass(frozen=True, slots=True)
class ScalarType:
    """One element / attribute type: its canonical name (as in arg_specs and NumPy), its
    ``BE::DType`` enumerator and value (equal to XLA's FFI data-type code), its kind and width."""

    name: str
    cxx_enum: str
    code: int
    kind: str  # "bool", "int", "uint", "float" or "complex"
    bits: int


# In the order the docs list them (SCALAR_TYPES: their canonical names).
SCALARS: tuple[ScalarType, ...] = (
    ScalarType("bool", "Bool", 1, "bool", 8),
    ScalarType("int8", "Int8", 2, "int", 8),
    ScalarType("int16", "Int16", 3, "int", 16),
    ScalarType("int32", "Int32", 4, "int", 32),
    ScalarType("int64", "Int64", 5, "int", 64),
    ScalarType("uint8", "UInt8", 6, "uint", 8),
    ScalarType("uint16", "UInt16", 7, "uint", 16),
    ScalarType("uint32", "UInt32", 8, "uint", 32),
    ScalarType("uint64", "UInt64", 9, "uint", 64),
    ScalarType("float16", "Float16", 10, "float", 16),
    ScalarType("bfloat16", "BFloat16", 16, "float", 16),
    ScalarType("float32", "Float32", 11, "float", 32),
    ScalarType("float64", "Float64", 12, "float", 64),
    ScalarType("complex64", "Complex64", 15, "complex", 64),
    ScalarType("complex128", "Complex128", 18, "complex", 128),
)

SCALAR_TYPES: tuple[str, ...] = tuple(s.name for s in SCALARS)

# ``BE::DType::Invalid``: the value of a parameter that has no type (tensors, streams).
INVALID_DTYPE: tuple[str, int] = ("Invalid", 0)

_BY_NAME = {s.name: s for s in SCALARS}


def scalar(name: str) -> ScalarType:
    """The scalar type called ``name``; ValueError naming the known ones otherwise."""
    found = _BY_NAME.get(name)
    if found is None:
        raise ValueError(f"unknown scalar type {name!r}; the binding knows: {', '.join(SCALAR_TYPES)}")
    return found


# The platforms the binding can decode a call frame for: tag -> (``BE::ffi::Platform``
# enumerator, its value).
PLATFORM_ENUM: dict[str, tuple[str, int]] = {tag: p.binding_enum for tag, p in BUILD_PLATFORMS.items()}


@dataclass(frozen=True, slots=True)
class BindingTarget:
    """What a platform tells the code generator: its tag (one of :data:`PLATFORM_ENUM`) and
    the preprocessor symbols the shared decoder is compiled with."""

    tag: str
    defines: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.tag not in PLATFORM_ENUM:
            raise ValueError(
                f"unknown binding platform {self.tag!r}; the binding knows: {', '.join(PLATFORM_ENUM)}. "
                "A new platform needs a BE::ffi::Platform value and a PLATFORM_ENUM entry first"
            )
        for define in self.defines:
            if not define.isidentifier():
                raise ValueError(f"binding define {define!r} is not a C identifier")
        object.__setattr__(self, "defines", tuple(self.defines))

    @property
    def cxx_enum(self) -> str:
        return PLATFORM_ENUM[self.tag][0]


def unhandled(value: Never, where: str) -> NoReturn:
    """An exhaustive match's default branch: mypy flags a missing member, run time raises."""
    raise ValueError(
        f"{where}: unhandled binding value {value!r}; every role / dtype / platform in "
        "brainevent.vocabulary needs a branch here (see docs/architecture.md, 'a new arg_spec token')"
    )
