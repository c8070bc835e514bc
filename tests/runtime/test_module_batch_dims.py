"""``mod.f.num_batch_dims``: bad settings are typed errors naming the value and the fix.

Partitioning itself (no all-gather under sharded jit, on several devices) is a cell of the
conformance matrix (tests/conformance)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import brainevent
from brainevent.errors import KernelCallError

SOURCE = r"""
#include "brainevent/common.h"
// @BE double_it arg ret
void double_it(const BE::Tensor x, BE::Tensor out) {
  for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = 2 * x.data_ptr<float>()[i];
}
// @BE with_scratch arg ret scratch:64
void with_scratch(const BE::Tensor x, BE::Tensor out, BE::Scratch s) {
  for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i];
}
"""


@pytest.fixture(scope="module")
def mod() -> brainevent.CompiledModule:
    return brainevent.load_cpp_inline(name="module_batch_dims", cpp_sources=SOURCE)


def test_declared_batch_dims_compute_the_same(mod: brainevent.CompiledModule) -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    f = jax.jit(lambda x: mod.double_it(x))
    mod.double_it.num_batch_dims = 1
    try:
        np.testing.assert_array_equal(np.asarray(f(x)), 2 * x)
        mod.double_it.vmap_method = "broadcast_all"
        np.testing.assert_array_equal(
            np.asarray(jax.vmap(mod.double_it)(np.stack([x, x]))), 2 * np.stack([x, x])
        )
    finally:
        mod.double_it.num_batch_dims = None
        mod.double_it.vmap_method = None


@pytest.mark.parametrize("value", [0, -1, 1.0, True, "1"])
def test_a_bad_num_batch_dims_is_named(mod: brainevent.CompiledModule, value: object) -> None:
    mod.double_it.num_batch_dims = value  # type: ignore[assignment]
    try:
        with pytest.raises(KernelCallError, match=r"num_batch_dims must be a positive int .*got"):
            mod.double_it(np.ones((2, 2), np.float32))
    finally:
        mod.double_it.num_batch_dims = None


def test_batch_dims_need_a_shared_leading_dim(mod: brainevent.CompiledModule) -> None:
    mod.double_it.num_batch_dims = 1
    try:
        with pytest.raises(
            KernelCallError, match=r"share its first 1 dims .*got shapes \[\(2, 2\), \(3, 2\)\]"
        ):
            mod.double_it(np.ones((2, 2), np.float32), outs=jax.ShapeDtypeStruct((3, 2), np.float32))
    finally:
        mod.double_it.num_batch_dims = None


def test_scratch_and_batch_dims_are_refused(mod: brainevent.CompiledModule) -> None:
    mod.with_scratch.num_batch_dims = 1
    try:
        with pytest.raises(KernelCallError, match="cannot declare batch dims"):
            mod.with_scratch(np.ones((2, 2), np.float32))
    finally:
        mod.with_scratch.num_batch_dims = None


def test_grad_is_a_typed_error(mod: brainevent.CompiledModule) -> None:
    mod.double_it.num_batch_dims = 1
    try:
        with pytest.raises(KernelCallError, match="cannot be differentiated"):
            jax.grad(lambda x: mod.double_it(x).sum())(np.ones((2, 2), np.float32))
    finally:
        mod.double_it.num_batch_dims = None
