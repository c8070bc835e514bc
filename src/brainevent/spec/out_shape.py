"""Declared results: the ``ret:like(x)[:type]`` and ``ret:(dim,...):type`` tokens, each optionally
``:zeros`` (and ``ret:zeros`` alone: cleared to zero before the kernel runs) (docs/arg-spec.md).

The generated binding checks the declaration on every call before the kernel runs (a kernel
that loops over its input's size cannot write past a result that is too small), and the call
sugar builds ``outs`` from it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import NamedTuple

from brainevent.errors import SpecError
from brainevent.spec.model import Param
from brainevent.spec.names import canonical_type as canon
from brainevent.vocabulary import SCALAR_TYPES, Role, scalar

MAX_FIXED_RANK = 8  # the binding keeps a fixed shape's dims in its parameter table
# XLA sizes an array, in elements and in bytes, with a signed 64-bit integer; past that it
# aborts the process ("overflow in static extent product") instead of raising.
MAX_SIZE = 2**63 - 1
SHAPE_FORMS = "ret:like(<input>)[:<type>], ret:(<dim>,...):<type> (each may end ':zeros') or ret:zeros"
_INTEGER_TYPES = frozenset(t for t in SCALAR_TYPES if t.startswith(("int", "uint")))
_NAME = "[A-Za-z_][A-Za-z0-9_]*"
# Compiled by `re` on first use: most modules declare no result shape.
_LIKE = rf"like\(({_NAME})\)(?::(\w+))?"
_FIXED = r"\(([^()]*)\):(\w+)"
_DIM = rf"[0-9]+|{_NAME}|{_NAME}\.shape\[[0-9]+\]"  # a literal, an integer attribute, an input's dim
_IN_DIM = rf"({_NAME})\.shape\[([0-9]+)\]"
MAX_INPUT_DIM = 255  # the binding packs an input dim's index in 8 bits


class OutShape(NamedTuple):
    """One parsed declaration: ``like`` (an input's name) or ``dims`` (ints, integer attribute
    names, ``x.shape[k]``), or neither (``ret:zeros``: the caller gives the shape)."""

    like: str | None
    dims: tuple[int | str, ...] | None
    dtype: str | None  # canonical; None with `like`: the input's own dtype
    zeros: bool = False  # cleared to zero before the kernel runs

    @property
    def canonical(self) -> str:
        suffix = f":{self.dtype}" if self.dtype else ""
        if self.like is not None:
            text = f"like({self.like}){suffix}"
        elif self.dims is not None:
            text = f"({','.join(str(d) for d in self.dims)}){suffix}"
        else:
            return "zeros"
        return text + ":zeros" if self.zeros else text

    @property
    def sized(self) -> bool:
        """Whether the declaration gives the result's shape (not ``ret:zeros`` alone)."""
        return self.like is not None or self.dims is not None


def declares_zeros(shape: str | None) -> bool:
    """Whether a canonical declaration (``OutShape.canonical``) clears its result to zero first."""
    return shape is not None and shape.endswith("zeros")


def input_dim(dim: int | str) -> tuple[str, int] | None:
    """``("x", 1)`` for the dim ``x.shape[1]``, else None."""
    found = re.fullmatch(_IN_DIM, dim) if isinstance(dim, str) else None
    return None if found is None else (found.group(1), int(found.group(2)))


def parse_out_shape(text: str) -> OutShape | None:
    """The declaration after ``ret:``, or None (an unknown type too: the caller lists the forms)."""
    if text == "zeros":
        return OutShape(None, None, None, True)
    zeros = text.endswith(":zeros")
    text = text.removesuffix(":zeros")
    like = re.fullmatch(_LIKE, text)
    if like is not None:
        written = like.group(2)
        dtype = canon(written) if written else None
        return OutShape(like.group(1), None, dtype, zeros) if dtype or not written else None
    fixed = re.fullmatch(_FIXED, text)
    if fixed is None or canon(fixed.group(2)) is None:
        return None
    inner = fixed.group(1).strip()
    parts = [p.strip() for p in inner.split(",")] if inner else []
    if parts and parts[-1] == "":  # "(8,)" as in Python
        parts.pop()
    if len(parts) > MAX_FIXED_RANK or not all(re.fullmatch(_DIM, p) for p in parts):
        return None
    dims = tuple(int(p) if p.isdigit() else p for p in parts)
    return OutShape(None, dims, canon(fixed.group(2)), zeros)


def size_problem(dims: Sequence[int], itemsize: int) -> str | None:
    """Why XLA cannot size an array of ``dims`` with ``itemsize``-byte elements, or None."""
    if negative := [d for d in dims if d < 0]:
        return f"dim {negative[0]} is negative; dims are sizes, 0 or more"
    if too_long := [d for d in dims if d > MAX_SIZE]:
        return f"dim {too_long[0]} is larger than XLA can size (at most 2**63-1)"
    count = math.prod(dims)
    if count * itemsize > MAX_SIZE:
        return (
            f"{_power(count)} elements of {itemsize} byte(s) make {_power(count * itemsize)} bytes, more "
            "than XLA can size (at most 2**63-1 bytes in one array)"
        )
    return None


def _power(n: int) -> str:
    """``n`` as ``2**k`` when it is one (the sizes that overflow usually are), else in digits."""
    return f"2**{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)


def literal_problem(decl: OutShape) -> str | None:
    """The size problem of a declaration's integer dims (an attribute dim counts as 1)."""
    if decl.dims is None or decl.dtype is None:
        return None
    literal = [d for d in decl.dims if isinstance(d, int)]
    return size_problem(literal, scalar(decl.dtype).bits // 8)


def check_out_shapes(head: str, params: Sequence[Param], function: str) -> None:
    """SpecError unless every declared result names an input (``like``) or integer attributes."""
    inputs = [p.name for p in params if p.role is Role.ARG]
    attrs = {p.name: p.dtype for p in params if p.role is Role.ATTR}
    for p in params:
        if p.role is not Role.RET or p.shape is None:
            continue
        decl = parse_out_shape(p.shape)
        assert decl is not None
        problem = ""
        if decl.like is not None and decl.like not in inputs:
            problem = (
                f"{decl.like!r} is not an input of the function (its inputs: {', '.join(inputs) or 'none'}). "
                "Fix: name an 'arg' parameter inside like(...)."
            )
        for dim in decl.dims or ():
            of_input = input_dim(dim)
            if not problem and of_input is not None:
                if of_input[0] not in inputs:
                    problem = (
                        f"dim {dim!r} names {of_input[0]!r}, which is not an input of the function (its "
                        f"inputs: {', '.join(inputs) or 'none'}). Fix: name an 'arg' parameter."
                    )
                elif of_input[1] > MAX_INPUT_DIM:
                    problem = f"dim {dim!r} indexes past dim {MAX_INPUT_DIM}. Fix: index a dim the input has."
            elif not problem and isinstance(dim, str) and attrs.get(dim) not in _INTEGER_TYPES:
                what = f"a {attrs[dim]} attribute" if dim in attrs else "not an attribute of the function"
                fix = (
                    f"use an integer, an integer attribute (attr.{dim}:int64) or an input's dim (x.shape[0])"
                )
                problem = f"dim {dim!r} is {what}. Fix: {fix}."
        if problem:
            raise SpecError(
                f"{head}: result '{p.name}' is declared ret:{p.shape}, but {problem}",
                function=function,
                parameter=p.name,
                token=f"ret:{p.shape}",
            )
