"""Loading changed source under the same name in one process (a notebook edit) takes effect."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import brainevent

TEMPLATE = r"""
#include "brainevent/common.h"
// @BE bump arg ret
void bump(const BE::Tensor x, BE::Tensor out) {{
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i] + {step}.0f;
}}
"""


def _raw(x: jax.Array) -> jax.Array:
    return jax.ffi.ffi_call("reload_me.bump", jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


def test_edit_and_reload_under_the_same_name() -> None:
    x = jnp.zeros(4, jnp.float32)
    first = brainevent.load_cpp_inline(name="reload_me", cpp_sources=TEMPLATE.format(step=1))
    compiled_before = jax.jit(_raw)
    np.testing.assert_array_equal(compiled_before(x), np.ones(4))

    second = brainevent.load_cpp_inline(name="reload_me", cpp_sources=TEMPLATE.format(step=5))
    assert second.path != first.path
    np.testing.assert_array_equal(_raw(x), np.full(4, 5.0))  # eager
    np.testing.assert_array_equal(jax.jit(_raw)(x + 0), np.full(4, 5.0))  # a new trace
    np.testing.assert_array_equal(compiled_before(x), np.full(4, 5.0))  # an executable compiled before
    np.testing.assert_array_equal(second.bump(x), np.full(4, 5.0))  # call sugar

    # Going back to the first source reuses its cache entry and takes effect again.
    third = brainevent.load_cpp_inline(name="reload_me", cpp_sources=TEMPLATE.format(step=1))
    assert third.path == first.path and not third.built_now
    np.testing.assert_array_equal(compiled_before(x), np.ones(4))

    # Loading identical source again is a no-op.
    fourth = brainevent.load_cpp_inline(name="reload_me", cpp_sources=TEMPLATE.format(step=1))
    assert not fourth.built_now
    np.testing.assert_array_equal(_raw(x), np.ones(4))


def test_crossed_reloads_under_two_prefixes_do_not_chain() -> None:
    x = jnp.zeros(2, jnp.float32)
    src_a, src_b = TEMPLATE.format(step=10), TEMPLATE.format(step=20)

    def call(prefix: str) -> np.ndarray:
        return np.asarray(jax.ffi.ffi_call(f"{prefix}.bump", jax.ShapeDtypeStruct(x.shape, x.dtype))(x))

    brainevent.load_cpp_inline(name="cross_mod", cpp_sources=src_a, target_prefix="cross_one")
    brainevent.load_cpp_inline(name="cross_mod", cpp_sources=src_b, target_prefix="cross_two")
    brainevent.load_cpp_inline(name="cross_mod", cpp_sources=src_b, target_prefix="cross_one")
    brainevent.load_cpp_inline(name="cross_mod", cpp_sources=src_a, target_prefix="cross_two")
    np.testing.assert_array_equal(call("cross_one"), np.full(2, 20.0))
    np.testing.assert_array_equal(call("cross_two"), np.full(2, 10.0))
