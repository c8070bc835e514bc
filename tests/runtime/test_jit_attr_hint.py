"""An attribute passed through ``jax.jit(mod.f)(x, n=2)`` is traced; the error says how to
pass it (close over it, or ``static_argnames``), and both ways work."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent.errors import KernelCallError

SOURCE = r"""
#include "brainevent/common.h"
// @BE add_n arg ret:like(x) attr.n:int32
void add_n(const BE::Tensor x, BE::Tensor out, int n) {
  for (int64_t i = 0; i < x.numel(); ++i) out.at<float>(i) = x.at<float>(i) + n;
}
"""


def test_traced_attribute_says_how_to_pass_it():
    mod = brainevent.load_cpp_inline(name="jit_attr_hint", cpp_sources=SOURCE)
    x = jnp.zeros(3, jnp.float32)
    with pytest.raises(KernelCallError) as info:
        jax.jit(mod.add_n)(x, n=2)
    text = str(info.value)
    for word in ("jit_attr_hint.add_n", "'n'", "traced value", "close over it", "static_argnames='n'"):
        assert word in text, (word, text)
    np.testing.assert_allclose(np.asarray(jax.jit(mod.add_n, static_argnames="n")(x, n=2)), [2, 2, 2])
    np.testing.assert_allclose(np.asarray(jax.jit(lambda x: mod.add_n(x, n=3))(x)), [3, 3, 3])
