"""One list of vmap methods and one error for a wrong one, whichever kernel kind is made."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import brainevent
from brainevent.calls.batching import METHODS
from brainevent.errors import KernelCallError

pytestmark = pytest.mark.unit

SOURCE = 'extern "C" __global__ void add(const float* x, float* y) {}'


def _outs() -> Any:
    import jax

    return jax.ShapeDtypeStruct((8,), np.float32)


MAKERS: dict[str, Callable[[str], Any]] = {
    "XLACustomKernel": lambda method: brainevent.XLACustomKernel(f"vm_{method}", vmap_method=method),
    "cuda_kernel": lambda method: brainevent.cuda_kernel(
        SOURCE, "add", _outs(), launch_dims=8, vmap_method=method
    ),
    "numba_kernel": lambda method: brainevent.numba_kernel(lambda x, y: None, _outs(), vmap_method=method),
}


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_a_wrong_vmap_method_is_one_error_naming_the_choices(kind: str) -> None:
    with pytest.raises(KernelCallError, match=r"vmap_method must be one of .*'sequential'.*got 'loop'"):
        MAKERS[kind]("loop")


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_every_kind_takes_every_method(kind: str) -> None:
    for method in METHODS:
        MAKERS[kind](method)
