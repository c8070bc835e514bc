"""Attribute tokens: 16-bit float attributes as raw bits or typed, and binding by name."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import brainevent
from brainevent.errors import SpecError
from brainevent.spec.resolve import resolve_functions

# Each function writes the attribute's 16 bits into a uint16 output.
BITS = r"""
#include <cstring>
#include "brainevent/common.h"

// brainevent 0.2.1's way: a uint16_t parameter receives the raw bits.
// @BE f16_bits ret attr.value:float16
void f16_bits(BE::Tensor out, uint16_t value) {
    for (int64_t i = 0; i < out.numel(); ++i) out.data_ptr<uint16_t>()[i] = value;
}

// @BE bf16_bits ret attr.value:bfloat16
void bf16_bits(BE::Tensor out, uint16_t value) {
    for (int64_t i = 0; i < out.numel(); ++i) out.data_ptr<uint16_t>()[i] = value;
}

// Typed: in host code BE::float16_t / bfloat16_t hold the bits; the spec is inferred.
// @BE f16_typed
void f16_typed(BE::Tensor out, BE::float16_t value) {
    for (int64_t i = 0; i < out.numel(); ++i) out.data_ptr<uint16_t>()[i] = value.bits;
}

// @BE bf16_typed
void bf16_typed(BE::Tensor out, const BE::bfloat16_t& value) {
    for (int64_t i = 0; i < out.numel(); ++i) out.data_ptr<uint16_t>()[i] = value.bits;
}

// A bare attr token on uint16_t stays an integer attribute.
// @BE u16 ret attr.value
void u16(BE::Tensor out, uint16_t value) {
    for (int64_t i = 0; i < out.numel(); ++i) out.data_ptr<uint16_t>()[i] = value;
}

// BE::complex64_t as an attribute type.
// @BE c64
void c64(BE::Tensor out, BE::complex64_t value) {
    out.data_ptr<float>()[0] = value.real;
    out.data_ptr<float>()[1] = value.imag;
}
"""

OUT = jax.ShapeDtypeStruct((3,), jnp.uint16)


@pytest.fixture(scope="module")
def bits() -> brainevent.CompiledModule:
    return brainevent.load_cpp_inline(name="attr_bits", cpp_sources=BITS)


def _bits_of(value: float, dtype: object) -> int:
    return int(np.array(value, dtype=dtype).view(np.uint16))


def test_specs_of_raw_bit_and_typed_parameters(bits: brainevent.CompiledModule) -> None:
    assert bits.specs["f16_bits"] == ["ret", "attr.value:float16"]
    assert bits.specs["bf16_bits"] == ["ret", "attr.value:bfloat16"]
    assert bits.specs["f16_typed"] == ["ret", "attr.value:float16"]
    assert bits.specs["bf16_typed"] == ["ret", "attr.value:bfloat16"]
    assert bits.specs["u16"] == ["ret", "attr.value:uint16"]
    assert bits.specs["c64"] == ["ret", "attr.value:complex64"]


@pytest.mark.parametrize(
    ("fn", "dtype"),
    [
        ("f16_bits", np.float16),
        ("f16_typed", np.float16),
        ("bf16_bits", ml_dtypes.bfloat16),
        ("bf16_typed", ml_dtypes.bfloat16),
    ],
)
@pytest.mark.parametrize("value", [1.5, -0.0, 65504.0, 1e-7, 3.140625])
def test_a_python_float_arrives_as_the_types_bits(
    bits: brainevent.CompiledModule, fn: str, dtype: object, value: float
) -> None:
    got = np.asarray(getattr(bits, fn)(value=value, outs=OUT))
    np.testing.assert_array_equal(got, np.full(3, _bits_of(value, dtype), np.uint16))


@pytest.mark.parametrize(("fn", "raw"), [("f16_bits", 0x3E00), ("bf16_typed", 0xC010), ("f16_typed", 0x7C01)])
def test_a_uint16_value_is_taken_as_the_raw_bits(bits: brainevent.CompiledModule, fn: str, raw: int) -> None:
    # As 0.2.1 took it through jax.ffi.ffi_call, and through the module's call sugar.
    direct = np.asarray(jax.ffi.ffi_call(f"attr_bits.{fn}", OUT)(value=np.uint16(raw)))
    sugar = np.asarray(getattr(bits, fn)(value=np.uint16(raw), outs=OUT))
    np.testing.assert_array_equal(direct, np.full(3, raw, np.uint16))
    np.testing.assert_array_equal(sugar, direct)


def test_a_uint16_attribute_is_still_a_number(bits: brainevent.CompiledModule) -> None:
    np.testing.assert_array_equal(np.asarray(bits.u16(value=15360, outs=OUT)), np.full(3, 15360, np.uint16))


def test_a_complex_pod_attribute(bits: brainevent.CompiledModule) -> None:
    # JAX passes no complex attributes; a real value fills the real part.
    got = np.asarray(jax.ffi.ffi_call("attr_bits.c64", jax.ShapeDtypeStruct((2,), jnp.float32))(value=-2.5))
    np.testing.assert_array_equal(got, [-2.5, 0.0])


@pytest.mark.parametrize("cxx_type", ["int16_t", "float", "uint32_t"])
def test_a_float16_token_refuses_other_parameter_types(cxx_type: str) -> None:
    src = f"void f(BE::Tensor out, {cxx_type} value) {{}}"
    with pytest.raises(SpecError, match=rf"token 2 'attr\.value:float16' does not fit .*`{cxx_type} value`"):
        resolve_functions({"f": ["ret", "attr.value:float16"]}, [("a.cpp", src)])


# ---- binding by name ----------------------------------------------------------------------

SCALE = "void scale(const BE::Tensor x, BE::Tensor out, float alpha, int32_t shift, int64_t stream) {}"


def test_an_attr_name_that_is_no_parameter_is_an_error() -> None:
    with pytest.raises(SpecError, match=r"token 3 'attr\.factor' names attribute 'factor'") as info:
        resolve_functions({"scale": "arg ret attr.factor attr.shift stream"}, [("k.cpp", SCALE)])
    message = str(info.value)
    assert "C++ parameter 3 is `float alpha`" in message
    assert (
        "the parameters are: const BE::Tensor x, BE::Tensor out, float alpha, int32_t shift, int64_t stream"
        in message
    )
    assert "Fix: write 'attr.alpha' for parameter 3" in message
    assert info.value.data["parameters"] == ["x", "out", "alpha", "shift", "stream"]


def test_attr_tokens_in_the_wrong_order_are_an_error() -> None:
    # Same types, so only the names can tell the order; before, they bound by position.
    src = "void axpby(const BE::Tensor x, BE::Tensor y, float alpha, float beta) {}"
    with pytest.raises(SpecError, match=r"'beta' is parameter 4, not 3.*put the tokens in the order"):
        resolve_functions({"axpby": "arg ret attr.beta attr.alpha"}, [("k.cpp", src)])


def test_an_unnamed_parameter_takes_any_attr_name() -> None:
    src = "void f(BE::Tensor out, float) {}"
    (spec,) = resolve_functions({"f": ["ret", "attr.whatever:float32"]}, [("k.cpp", src)])
    assert spec.tokens() == ["ret", "attr.whatever:float32"]


def test_an_annotation_with_a_wrong_attr_name_fails_the_load() -> None:
    src = '#include "brainevent/common.h"\n// @BE scale arg ret attr.alpha attr.shift_by stream\n' + SCALE
    with pytest.raises(
        SpecError, match=r"scale \(attr_misnamed\.cpp:3\), arg_spec from '@BE' at attr_misnamed\.cpp:2"
    ):
        brainevent.load_cpp_inline(name="attr_misnamed", cpp_sources=src)
