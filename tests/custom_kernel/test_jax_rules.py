"""defjvp and general_batching_rule on bare JAX primitives (brainevent 0.2.1's names)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend.core import Primitive
from jax.interpreters import mlir

import brainevent


def _mul() -> Primitive:
    prim = Primitive("rules_mul")
    prim.def_impl(lambda x, y: x * y)
    prim.def_abstract_eval(lambda x, y: jax.core.ShapedArray(x.shape, x.dtype))
    mlir.register_lowering(prim, mlir.lower_fun(lambda x, y: x * y, multiple_results=False))
    return prim


def test_defjvp_one_rule_per_input_gives_forward_and_reverse_derivatives() -> None:
    prim = _mul()
    brainevent.defjvp(prim, lambda t, x, y: t * y, lambda t, x, y: x * t)
    x, y = jnp.asarray(3.0), jnp.asarray(5.0)
    assert jax.jvp(lambda a: prim.bind(a, y), (x,), (jnp.asarray(1.0),))[1] == 5.0
    gx, gy = jax.grad(lambda a, b: prim.bind(a, b), argnums=(0, 1))(x, y)
    assert (float(gx), float(gy)) == (5.0, 3.0)


def test_defjvp_none_marks_an_input_without_tangent() -> None:
    prim = _mul()
    brainevent.defjvp(prim, lambda t, x, y: t * y, None)
    _, tangent = jax.jvp(lambda b: prim.bind(jnp.asarray(3.0), b), (jnp.asarray(5.0),), (jnp.asarray(1.0),))
    assert float(tangent) == 0.0


def test_defjvp_rule_count_must_match_the_inputs() -> None:
    prim = _mul()
    brainevent.defjvp(prim, lambda t, x, y: t * y)
    with pytest.raises(ValueError, match=r"rules_mul.*1 rule\(s\) for 2 input\(s\)"):
        jax.jvp(lambda a: prim.bind(a, jnp.asarray(2.0)), (jnp.asarray(1.0),), (jnp.asarray(1.0),))


def test_defjvp_several_results_need_a_tuple_per_rule() -> None:
    prim = Primitive("rules_two")
    prim.multiple_results = True
    prim.def_impl(lambda x: (2 * x, 3 * x))
    prim.def_abstract_eval(lambda x: (jax.core.ShapedArray(x.shape, x.dtype),) * 2)
    brainevent.defjvp(prim, lambda t, x: (2 * t, 3 * t))
    x = jnp.arange(3.0)
    _, (ta, tb) = jax.jvp(lambda v: tuple(prim.bind(v)), (x,), (jnp.ones(3),))
    np.testing.assert_array_equal(np.asarray(ta), 2.0)
    np.testing.assert_array_equal(np.asarray(tb), 3.0)
    brainevent.defjvp(prim, lambda t, x: t)  # a bare array, not one tangent per result
    with pytest.raises(TypeError, match=r"rules_two.*tuple or list of 2 tangents"):
        jax.jvp(lambda v: tuple(prim.bind(v)), (x,), (jnp.ones(3),))


def test_defjvp_refuses_what_is_not_a_primitive() -> None:
    with pytest.raises(TypeError, match="needs a JAX Primitive or an XLACustomKernel, got int"):
        brainevent.defjvp(3, None)


def test_general_batching_rule_loops_over_batched_operands_only() -> None:
    prim = _mul()
    a = jnp.arange(6.0).reshape(3, 2)  # batched along axis 1
    b = jnp.asarray([10.0, 20.0, 30.0])
    out, dims = brainevent.general_batching_rule(prim, (a, b), (1, None))
    assert dims == 0
    np.testing.assert_allclose(np.asarray(out), np.asarray(a).T * np.asarray(b))
    once, none = brainevent.general_batching_rule(prim, (b, b), (None, None))
    assert none is None
    np.testing.assert_allclose(np.asarray(once), np.asarray(b) ** 2)


def test_warp_type_helpers() -> None:
    warp = pytest.importorskip("warp", reason="warp-lang is not installed (the `warp` extra)")
    assert brainevent.jaxtype_to_warptype(float) is warp.float64
    assert brainevent.jaxtype_to_warptype(jnp.int32) is warp.int32
    assert brainevent.jaxtype_to_warptype(bool) is warp.bool
    with pytest.raises(ValueError, match="no scalar type for dtype complex64"):
        brainevent.jaxtype_to_warptype(np.complex64)
    assert brainevent.jaxinfo_to_warpinfo(jax.ShapeDtypeStruct((4, 5), jnp.float32)).ndim == 2
    with pytest.raises(ValueError, match="0-dimensional"):
        brainevent.jaxinfo_to_warpinfo(jax.ShapeDtypeStruct((), jnp.float32))
