"""What a bridged call knows at trace time: its operands' ranks and dtypes, and ``outs``."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import KernelCallError
from .ffi import is_spec


@dataclass(frozen=True)
class Operand:
    ndim: int
    dtype: np.dtype[Any]

    @property
    def itemsize(self) -> int:
        return int(self.dtype.itemsize)


@dataclass(frozen=True)
class Signature:
    """Inputs then outputs, in the order the Numba function receives them."""

    inputs: tuple[Operand, ...]
    outputs: tuple[Operand, ...]

    @property
    def operands(self) -> tuple[Operand, ...]:
        return self.inputs + self.outputs


def _operand(value: Any) -> Operand:
    return Operand(len(np.shape(value)), np.dtype(value.dtype))


def check_arrays(kernel: str, arrays: Sequence[Any], scalars_go: str) -> None:
    """KernelCallError naming the first argument that is not an array (``scalars_go``: where scalars go)."""
    for i, a in enumerate(arrays):
        if not is_spec(a):
            raise KernelCallError(
                f"{kernel}: argument {i} must be an array, got {type(a).__name__}; pass scalars {scalars_go}",
                kernel=kernel,
            )


def signature_of(args: tuple[Any, ...], out_specs: list[Any]) -> Signature:
    for position, arg in enumerate(args):
        if not is_spec(arg):
            raise TypeError(f"argument {position} must be an array, got {type(arg).__name__}")
    return Signature(tuple(_operand(a) for a in args), tuple(_operand(o) for o in out_specs))


def content_id(*parts: bytes | str) -> int:
    """A positive int64 from the content: the same in every process, so an executable from JAX's
    persistent cache never names another kernel."""
    digest = hashlib.blake2b(digest_size=8)
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return int.from_bytes(digest.digest(), "little") & 0x7FFF_FFFF_FFFF_FFFF
