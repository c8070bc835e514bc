"""A CUDA module built where it cannot be registered (no GPU, or JAX without CUDA): its call
sugar says why, instead of XLA's "No FFI handler registered for ... on a platform Host"."""

from __future__ import annotations

import pickle

import jax
import jax.numpy as jnp
import pytest

import brainevent
from brainevent import KernelNotAvailableError
from tests.support.kernels import CUDA_VECTOR_ADD_CHECKED as VECTOR_ADD

pytestmark = pytest.mark.nvcc

# What the loader records on a machine without a usable CUDA JAX (see backends.can_register).
WHY = r"(JAX is installed without CUDA support|no GPU is available|this JAX has no CUDA backend)"


@pytest.fixture(scope="module")
def unregistered() -> brainevent.CompiledModule:
    mod = brainevent.load_cuda_inline(name="vadd_unreg", cuda_sources=VECTOR_ADD, compute_capability="sm_80")
    if mod.registered:
        pytest.skip("this machine registers CUDA modules (a GPU and a CUDA JAX are present)")
    return mod


def test_call_names_the_reason_and_the_fix(unregistered: brainevent.CompiledModule) -> None:
    x = jnp.ones(8, jnp.float32)
    pattern = (
        r"vadd_unreg\.vector_add: module 'vadd_unreg' was built for CUDA but not registered with JAX "
        rf"in this process, so it cannot be called: {WHY}.*pip install 'jax\[cuda13\]'"
    )
    with pytest.raises(KernelNotAvailableError, match=pattern) as info:
        unregistered.vector_add(x, x)
    assert info.value.target == "vadd_unreg.vector_add" and info.value.platform == "cuda"
    assert info.value.reason == unregistered.unregistered_reason
    again = pickle.loads(pickle.dumps(info.value))
    assert str(again) == str(info.value)


def test_call_under_jit_fails_while_tracing(unregistered: brainevent.CompiledModule) -> None:
    x = jnp.ones(8, jnp.float32)
    with pytest.raises(KernelNotAvailableError, match=rf"not registered with JAX in this process.*{WHY}"):
        jax.jit(lambda a: unregistered.vector_add(a, a))(x)


def test_auto_register_false_records_no_reason() -> None:
    # The caller chose to register by hand: the sugar does not second-guess that.
    mod = brainevent.load_cuda_inline(
        name="vadd_unreg", cuda_sources=VECTOR_ADD, compute_capability="sm_80", auto_register=False
    )
    assert mod.unregistered_reason is None and mod.vector_add.unregistered is None
