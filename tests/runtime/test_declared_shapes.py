"""Declared result shapes (``ret:like(x)``, ``ret:like(x):int32``, ``ret:(n,4):float32``):
the generated binding refuses a result of another shape before the kernel runs, and the call
sugar builds ``outs`` from the declaration."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent.errors import KernelCallError, SpecError

# Written as the docs write kernels: the loop runs over the *input's* size, so a result of
# the wrong size would be overrun (4 elements) or left partly unwritten (16 elements).
SOURCE = r"""
#include "brainevent/common.h"
// @BE scale arg ret:like(x) attr.s:float32
void scale(const BE::Tensor x, BE::Tensor out, float s) {
  const float* px = x.data_ptr<float>(); float* po = out.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) po[i] = px[i] * s;
}
// @BE sign arg ret:like(x):int32
void sign(const BE::Tensor x, BE::Tensor out) {
  const float* px = x.data_ptr<float>(); int32_t* po = out.data_ptr<int32_t>();
  for (int64_t i = 0; i < x.numel(); ++i) po[i] = px[i] > 0 ? 1 : (px[i] < 0 ? -1 : 0);
}
// @BE iota arg ret:(n,2):int64 attr.n:int32
void iota(const BE::Tensor x, BE::Tensor out, int n) {
  int64_t* po = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < int64_t(n) * 2; ++i) po[i] = i;
}
"""


@pytest.fixture(scope="module")
def mod():
    return brainevent.load_cpp_inline(name="declared_shapes", cpp_sources=SOURCE, functions=None)


def test_specs_show_the_declarations(mod):
    assert mod.specs["scale"] == ["arg", "ret:like(x)", "attr.s:float32"]
    assert mod.specs["sign"] == ["arg", "ret:like(x):int32"]
    assert mod.specs["iota"] == ["arg", "ret:(n,2):int64", "attr.n:int32"]


@pytest.mark.parametrize("n", [4, 16])
def test_binding_refuses_a_wrong_result_shape_through_ffi_call(mod, n):
    x = jnp.arange(8, dtype=jnp.float32)
    call = jax.ffi.ffi_call("declared_shapes.scale", jax.ShapeDtypeStruct((n,), jnp.float32))
    with pytest.raises(jax.errors.JaxRuntimeError) as info:
        np.asarray(call(x, s=np.float32(2.0)))
    text = str(info.value)
    for word in (
        "INVALID_ARGUMENT",
        "declared_shapes.scale",
        "'out'",
        "ret:like(x)",
        "must have shape (8,)",
        f"got shape ({n},)",
        "not run",
        "mod.scale",
    ):
        assert word in text, (word, text)
    # The process is intact and the right shape still works, under jit too.
    good = jax.ffi.ffi_call("declared_shapes.scale", jax.ShapeDtypeStruct((8,), jnp.float32))
    y = jax.jit(lambda x: good(x, s=np.float32(2.0)))(x)
    np.testing.assert_allclose(np.asarray(y), np.arange(8) * 2.0)


def test_binding_checks_dtype_and_fixed_shapes(mod):
    x = jnp.array([-2.0, 0.0, 3.0], jnp.float32)
    wrong_dtype = jax.ffi.ffi_call("declared_shapes.sign", jax.ShapeDtypeStruct((3,), jnp.float32))
    with pytest.raises(jax.errors.JaxRuntimeError, match=r"dtype int32, got shape \(3,\) and dtype float32"):
        np.asarray(wrong_dtype(x))
    fixed = jax.ffi.ffi_call("declared_shapes.iota", jax.ShapeDtypeStruct((2, 2), jnp.int64))
    with pytest.raises(jax.errors.JaxRuntimeError, match=r"must have shape \(3, 2\).*got shape \(2, 2\)"):
        np.asarray(fixed(x, n=np.int32(3)))


def test_call_sugar_builds_outs_from_the_declaration(mod):
    x = jnp.array([-2.0, 0.0, 3.0, 1.0], jnp.float32)
    np.testing.assert_allclose(np.asarray(mod.scale(x, s=3.0)), np.asarray(x) * 3)
    signs = jax.jit(mod.sign)(x)
    assert signs.dtype == jnp.int32
    np.testing.assert_array_equal(np.asarray(signs), [-1, 0, 1, 1])
    grid = jax.jit(lambda x: mod.iota(x, n=5))(x)
    assert grid.shape == (5, 2) and grid.dtype == jnp.int64
    np.testing.assert_array_equal(np.asarray(grid), np.arange(10).reshape(5, 2))


def test_call_sugar_refuses_outs_that_contradict_the_declaration(mod):
    x = jnp.arange(8, dtype=jnp.float32)
    with pytest.raises(KernelCallError) as info:
        mod.scale(x, s=1.0, outs=jax.ShapeDtypeStruct((4,), jnp.float32))
    text = str(info.value)
    for word in ("declared_shapes.scale", "ret:like(x)", "(8,)", "(4,)", "drop outs="):
        assert word in text, (word, text)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("token", "words"),
    [
        ("ret:like(y)", ["'y' is not an input", "its inputs: x"]),
        ("ret:(k,2):float32", ["dim 'k'", "not an attribute"]),
        ("ret:(s,2):float32", ["dim 's'", "a float32 attribute", "integer"]),
        ("ret:(n,2)", ["not a result shape", "ret:like(<input>)"]),
        ("ret:like(x):flaot", ["not a result shape"]),
    ],
)
def test_bad_declarations_are_spec_errors(token, words):
    from brainevent.spec.bind import bind_tokens
    from brainevent.spec.signature import pick_one, scan_functions
    from brainevent.spec.tokens import parse_tokens

    src = "void f(const BE::Tensor x, BE::Tensor out, float s, int n) {}"
    with pytest.raises(SpecError) as info:
        toks = parse_tokens("f", ["arg", token, "attr.s", "attr.n"])
        sig = pick_one("f", scan_functions(src))
        assert sig is not None
        bind_tokens(sig, toks)
    for word in words:
        assert word in str(info.value), (word, str(info.value))
