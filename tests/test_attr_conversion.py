"""The call sugar's checks before anything reaches XLA: attribute conversion and range
checks for every scalar type, arity, result specs, and the module's function lookup.

(The compiled handler repeats the attribute checks for raw ``jax.ffi.ffi_call`` use:
tests/test_cpu_errors.py.) No compiler is needed here: the functions are built from specs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from brainevent import KernelCallError
from brainevent.runtime.module import CompiledModule, KernelFunction, _convert_attr
from brainevent.spec.model import FunctionSpec, Param, Role

INTEGERS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
REALS = ["float16", "bfloat16", "float32", "float64"]


def convert(dtype: str, value: Any) -> Any:
    return _convert_attr("m.f", "n", dtype, value)


@pytest.mark.parametrize("dtype", INTEGERS)
def test_integers_convert_exactly_at_both_bounds(dtype: str) -> None:
    info = np.iinfo(dtype)
    for value in (int(info.min), int(info.max), 0, np.int8(7), np.uint8(7)):
        out = convert(dtype, value)
        assert type(out) is np.dtype(dtype).type and int(out) == int(value)


@pytest.mark.parametrize("dtype", INTEGERS)
def test_integers_one_past_either_bound_are_refused(dtype: str) -> None:
    info = np.iinfo(dtype)
    for value in (int(info.min) - 1, int(info.max) + 1):
        pattern = rf"m\.f: attribute 'n' = {value} is out of range for {dtype} \[{info.min}, {info.max}\]$"
        with pytest.raises(KernelCallError, match=pattern) as caught:
            convert(dtype, value)
        assert caught.value.data == {"target": "m.f", "attribute": "n"}


@pytest.mark.parametrize("value", [2.0, 2.5, True, np.bool_(False), "2", None, 1j])
def test_integers_refuse_everything_but_ints(value: Any) -> None:
    with pytest.raises(KernelCallError, match=r"attribute 'n' expects int32, got .*; pass an int$"):
        convert("int32", value)


def test_bool() -> None:
    assert convert("bool", True) is np.True_ and convert("bool", np.bool_(False)) is np.False_
    for value in (1, 0, "True", None):
        with pytest.raises(KernelCallError, match=r"attribute 'n' expects bool, got .*; pass True or False$"):
            convert("bool", value)


@pytest.mark.parametrize("dtype", REALS)
def test_reals_convert_ints_and_floats(dtype: str) -> None:
    np_type = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype).type
    # XLA takes no 16-bit float attribute: a half value travels as the float32 holding it.
    carrier = np.float32 if dtype in ("float16", "bfloat16") else np_type
    for value in (3, 0.5, -2.25, np.float32(1.5), np.int16(-4), float("inf"), float("nan")):
        out = convert(dtype, value)
        assert type(out) is carrier
        assert np.isnan(float(out)) if value != value else float(out) == float(value)
    # Rounded to the declared type, not to the carrier: 1 + 2**-11 is not a float16.
    assert float(convert(dtype, 1 + 2**-11)) == float(np_type(1 + 2**-11))


@pytest.mark.parametrize("dtype", REALS)
def test_reals_past_the_largest_finite_value_are_refused(dtype: str) -> None:
    limit = float(ml_dtypes.finfo(ml_dtypes.bfloat16).max if dtype == "bfloat16" else np.finfo(dtype).max)
    assert float(convert(dtype, -limit)) == -limit  # the bound itself is fine
    for value in (limit * 2, -limit * 2) if dtype != "float64" else (10**309, -(10**309)):
        with pytest.raises(
            KernelCallError, match=rf"attribute 'n' = .* is out of range for {dtype} \(\|x\| <= "
        ):
            convert(dtype, value)


@pytest.mark.parametrize("value", [True, "1.0", None, 1j])
def test_reals_refuse_bools_strings_and_complex(value: Any) -> None:
    with pytest.raises(KernelCallError, match=r"attribute 'n' expects float32, got "):
        convert("float32", value)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex(dtype: str) -> None:
    for value in (1 + 2j, 3, 0.5, np.complex64(1j)):
        out = convert(dtype, value)
        assert type(out) is np.dtype(dtype).type and complex(out) == complex(value)
    for value in (True, "1j", None):
        with pytest.raises(KernelCallError, match=rf"attribute 'n' expects {dtype}, got "):
            convert(dtype, value)


@pytest.mark.parametrize("dtype", ["int32", "bool", "float32", "complex64"])
def test_arrays_are_refused_but_zero_dimensional_ones_convert(dtype: str) -> None:
    with pytest.raises(
        KernelCallError, match=rf"attribute 'n' must be a scalar {dtype}, got an array of shape \(2,\)"
    ):
        convert(dtype, np.zeros(2, dtype))
    if dtype == "int32":
        assert convert(dtype, np.int64(5)) == 5


# ------------------------------------------------------------------- a function's call


def function(*tokens: str, target: str = "m.f") -> KernelFunction:
    params = []
    for i, token in enumerate(tokens):
        if token.startswith("attr."):
            name, _, dtype = token[len("attr.") :].partition(":")
            params.append(Param(Role.ATTR, name, dtype or None))
        else:
            params.append(Param(Role(token), f"p{i}"))
    return KernelFunction(target, FunctionSpec("f", tuple(params)))


def test_converted_attrs_names_unknown_and_missing_ones() -> None:
    f = function("arg", "ret", "attr.scale:float32", "attr.n:int64")
    out = f.converted_attrs({"scale": 2, "n": 3})
    assert out == {"scale": np.float32(2.0), "n": np.int64(3)}
    assert type(out["scale"]) is np.float32 and type(out["n"]) is np.int64
    with pytest.raises(
        KernelCallError, match=r"unexpected attribute\(s\) \['bogus', 'x'\]; it takes \['n', 'scale'\]"
    ):
        f.converted_attrs({"scale": 2, "n": 3, "x": 1, "bogus": 1})
    with pytest.raises(
        KernelCallError, match=r"missing attribute\(s\) \['n', 'scale'\]; pass them as keywords"
    ):
        f.converted_attrs({})
    with pytest.raises(KernelCallError, match=r"it takes no attributes"):
        function("arg", "ret").converted_attrs({"x": 1})


def test_an_attribute_without_a_declared_type_is_a_float64() -> None:
    out = function("arg", "ret", "attr.scale").converted_attrs({"scale": 2})
    assert type(out["scale"]) is np.float64


def test_arity() -> None:
    f = function("arg", "arg", "ret", "stream")
    f.check_arity(2)
    f.check_arity(2, 1)
    with pytest.raises(
        KernelCallError, match=r"m\.f: expected 2 input array\(s\) \(arg arg ret stream\), got 3$"
    ):
        f.check_arity(3)
    with pytest.raises(KernelCallError, match=r"m\.f: expected 1 result spec\(s\) \(one per 'ret'\), got 2$"):
        f.check_arity(2, 2)


def test_result_specs() -> None:
    x = jnp.zeros((2, 3), jnp.int16)
    one, two = function("arg", "ret"), function("arg", "ret", "ret")
    assert one._result_specs([x], None) == [jax.ShapeDtypeStruct((2, 3), jnp.int16)]
    assert two._result_specs([x], None) == [jax.ShapeDtypeStruct((2, 3), jnp.int16)] * 2
    spec = jax.ShapeDtypeStruct((4,), jnp.float32)
    assert one._result_specs([x], spec) == [spec]
    assert two._result_specs([x], [spec, np.zeros(1, np.int8)]) == [spec, jax.ShapeDtypeStruct((1,), np.int8)]
    with pytest.raises(
        KernelCallError, match=r"expected 2 result spec\(s\) in outs= \(one per 'ret'\), got 1$"
    ):
        two._result_specs([x], [spec])
    with pytest.raises(KernelCallError, match=r"outs= entries need \.shape and \.dtype .*got 4$"):
        one._result_specs([x], 4)
    with pytest.raises(KernelCallError, match=r"has no inputs to take result shapes from; pass outs="):
        function("ret")._result_specs([], None)


def test_validation_happens_before_any_call() -> None:
    # No target of this name exists: every error below comes from the checks, not from XLA.
    f = function("arg", "ret", "attr.n:int8", target="nowhere.f")
    x = jnp.ones(3, jnp.float32)
    with pytest.raises(KernelCallError, match="expected 1 input array"):
        f(x, x, n=1)
    with pytest.raises(KernelCallError, match=r"= 128 is out of range for int8"):
        f(x, n=128)
    with pytest.raises(KernelCallError, match="expected 1 result spec"):
        f(x, n=1, outs=[x, x])


def test_module_function_lookup(tmp_path: Path) -> None:
    spec = FunctionSpec("f", (Param(Role.ARG, "x"), Param(Role.RET, "y"), Param(Role.ATTR, "k", "int32")))
    mod = CompiledModule("m", tmp_path / "libm.so", "cpu", {"f": spec}, {"f": "pre.f"}, True, False, tmp_path)
    assert mod.f is mod.f and mod.f.target == "pre.f" and mod.f.platform == "cpu"
    assert mod.specs == {"f": ["arg", "ret", "attr.k:int32"]}
    assert mod.target_names == ["pre.f"]
    assert "f" in dir(mod) and "specs" in dir(mod)
    with pytest.raises(AttributeError, match=r"module 'm' has no function 'g'; it has \['f'\]"):
        _ = mod.g


HALF_ATTRS = r"""
#include "brainevent/common.h"
// @BE half_bits arg ret attr.b:bfloat16 attr.h:float16
void half_bits(const BE::Tensor x, BE::Tensor out, BE::bfloat16 b, BE::float16 h) {
    out.data_ptr<float>()[0] = static_cast<float>(b.bits);
    out.data_ptr<float>()[1] = static_cast<float>(h.bits);
}
"""


def test_half_precision_attributes_through_the_call_sugar() -> None:
    import brainevent

    mod = brainevent.load_cpp_inline(name="attr_half_bits", cpp_sources=HALF_ATTRS)
    out = mod.half_bits(jnp.zeros(2, jnp.float32), b=1.5, h=-2)
    # The handler receives exactly the 16-bit patterns of the converted values.
    expected = [ml_dtypes.bfloat16(1.5).view(np.uint16), np.float16(-2).view(np.uint16)]
    np.testing.assert_array_equal(np.asarray(out), np.array(expected, np.float32))
    with pytest.raises(KernelCallError, match=r"attribute 'b' = 1e\+39 is out of range for bfloat16"):
        mod.half_bits(jnp.zeros(2, jnp.float32), b=1e39, h=0)
