"""The call sugar's checks before anything reaches XLA: attribute conversion and range
checks for every scalar type, arity, result specs, and the module's function lookup.

(The compiled handler repeats the attribute checks for raw ``jax.ffi.ffi_call`` use:
tests/runtime/test_cpu_errors.py.) No compiler is needed here: the functions are built from specs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from brainevent import KernelCallError
from brainevent.runtime.attrs import convert_attr
from brainevent.runtime.kernel_function import KernelFunction
from brainevent.runtime.module import CompiledModule
from brainevent.runtime.results import result_specs
from brainevent.spec.model import FunctionSpec, Param, Role

INTEGERS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
REALS = ["float16", "bfloat16", "float32", "float64"]


def convert(dtype: str, value: Any) -> Any:
    return convert_attr("m.f", "n", dtype, value)


@contextlib.contextmanager
def call_error(pattern: str, attribute: str | None = "n", target: str = "m.f") -> Iterator[None]:
    """A KernelCallError matching `pattern` whose data names the target (and the attribute)."""
    with pytest.raises(KernelCallError, match=pattern) as caught:
        yield
    assert caught.value.data == (
        {"target": target, "attribute": attribute} if attribute else {"target": target}
    )


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
        with call_error(pattern):
            convert(dtype, value)


@pytest.mark.parametrize("value", [2.0, 2.5, True, np.bool_(False), "2", None, 1j])
def test_integers_refuse_everything_but_ints(value: Any) -> None:
    with call_error(rf"^m\.f: attribute 'n' expects int32, got .* \({type(value).__name__}\); pass an int$"):
        convert("int32", value)


def test_bool() -> None:
    assert convert("bool", True) is np.True_ and convert("bool", np.bool_(False)) is np.False_
    for value in (1, 0, "True", None):
        with call_error(r"attribute 'n' expects bool, got .*; pass True or False$"):
            convert("bool", value)


@pytest.mark.parametrize("dtype", REALS)
def test_reals_convert_ints_and_floats(dtype: str) -> None:
    np_type = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype).type
    # XLA takes no 16-bit float attribute: a half value travels as its bits, a uint16.
    carrier = np.uint16 if dtype in ("float16", "bfloat16") else np_type
    for value in (3, 0.5, -2.25, np.float32(1.5), np.int16(-4), float("inf"), float("nan")):
        out = convert(dtype, value)
        assert type(out) is carrier
        got = decoded(dtype, out)
        assert np.isnan(got) if value != value else got == float(value)
    # Rounded to the declared type: 1 + 2**-11 is not a float16.
    assert decoded(dtype, convert(dtype, 1 + 2**-11)) == float(np_type(1 + 2**-11))


def decoded(dtype: str, out: Any) -> float:
    """The value a converted real attribute stands for (16-bit floats travel as their bits)."""
    if dtype in ("float16", "bfloat16"):
        np_type = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16
        return float(np.array(out, np.uint16).view(np_type))
    return float(out)


@pytest.mark.parametrize("dtype", REALS)
def test_reals_past_the_largest_finite_value_are_refused(dtype: str) -> None:
    limit = float(ml_dtypes.finfo(ml_dtypes.bfloat16).max if dtype == "bfloat16" else np.finfo(dtype).max)
    assert decoded(dtype, convert(dtype, -limit)) == -limit  # the bound itself is fine
    for value in (limit * 2, -limit * 2) if dtype != "float64" else (10**309, -(10**309)):
        with call_error(rf"attribute 'n' = .* is out of range for {dtype} \(\|x\| <= "):
            convert(dtype, value)


@pytest.mark.parametrize("value", [True, "1.0", None, 1j])
def test_reals_refuse_bools_strings_and_complex(value: Any) -> None:
    with call_error(rf"^m\.f: attribute 'n' expects float32, got .* \({type(value).__name__}\)$"):
        convert("float32", value)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex(dtype: str) -> None:
    # XLA has no complex scalar attribute: the value travels as the float pair [re, im].
    part = np.float32 if dtype == "complex64" else np.float64
    for value in (1 + 2j, 3, 0.5, np.complex64(1j)):
        out = convert(dtype, value)
        assert out.dtype == part and out.shape == (2,) and complex(out[0], out[1]) == complex(value)
    for value in (True, "1j", None):
        with call_error(rf"attribute 'n' expects {dtype}, got "):
            convert(dtype, value)


@pytest.mark.parametrize("dtype", ["int32", "bool", "float32", "complex64"])
def test_arrays_are_refused_but_zero_dimensional_ones_convert(dtype: str) -> None:
    with call_error(rf"attribute 'n' must be a scalar {dtype}, got an array of shape \(2,\)"):
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
    with call_error(r"unexpected attribute\(s\) \['bogus', 'x'\]; it takes \['n', 'scale'\]", attribute=None):
        f.converted_attrs({"scale": 2, "n": 3, "x": 1, "bogus": 1})
    with call_error(r"missing attribute\(s\) \['n', 'scale'\]; pass them as keywords", attribute=None):
        f.converted_attrs({})
    with call_error(r"it takes no attributes", attribute=None):
        function("arg", "ret").converted_attrs({"x": 1})


def test_an_attribute_without_a_declared_type_is_a_float64() -> None:
    out = function("arg", "ret", "attr.scale").converted_attrs({"scale": 2})
    assert type(out["scale"]) is np.float64


def test_arity() -> None:
    f = function("arg", "arg", "ret", "stream")
    f.check_arity(2)
    f.check_arity(2, 1)
    with call_error(r"m\.f: expected 2 input array\(s\) \(arg arg ret stream\), got 3$", attribute=None):
        f.check_arity(3)
    with call_error(r"m\.f: expected 1 result spec\(s\) \(one per 'ret'\), got 2$", attribute=None):
        f.check_arity(2, 2)


def specs(f: KernelFunction, arrays: list[Any], outs: Any) -> list[Any]:
    return result_specs(f.target, f.spec, arrays, {}, outs)


def test_result_specs() -> None:
    x = jnp.zeros((2, 3), jnp.int16)
    one, two = function("arg", "ret"), function("arg", "ret", "ret")
    assert specs(one, [x], None) == [jax.ShapeDtypeStruct((2, 3), jnp.int16)]
    assert specs(two, [x], None) == [jax.ShapeDtypeStruct((2, 3), jnp.int16)] * 2
    spec = jax.ShapeDtypeStruct((4,), jnp.float32)
    assert specs(one, [x], spec) == [spec]
    assert specs(two, [x], [spec, np.zeros(1, np.int8)]) == [spec, jax.ShapeDtypeStruct((1,), np.int8)]
    with call_error(r"expected 2 result spec\(s\) in outs= \(one per 'ret'\), got 1$", attribute=None):
        specs(two, [x], [spec])
    with call_error(r"outs= entries need \.shape and \.dtype .*got 4$", attribute=None):
        specs(one, [x], 4)
    for half in (SimpleNamespace(shape=(3,)), SimpleNamespace(dtype=np.float32)):
        with call_error(
            r"outs= entries need \.shape and \.dtype \(use jax\.ShapeDtypeStruct\)", attribute=None
        ):
            specs(one, [x], half)
    with call_error(
        r"has no inputs to take result shapes from; pass outs=jax\.ShapeDtypeStruct\(\.\.\.\)$",
        attribute=None,
    ):
        specs(function("ret"), [], None)


def test_validation_happens_before_any_call() -> None:
    # No target of this name exists: every error below comes from the checks, not from XLA.
    f = function("arg", "ret", "attr.n:int8", target="nowhere.f")
    x = jnp.ones(3, jnp.float32)
    with call_error("expected 1 input array", attribute=None, target="nowhere.f"):
        f(x, x, n=1)
    with call_error(r"= 128 is out of range for int8", target="nowhere.f"):
        f(x, n=128)
    with call_error("expected 1 result spec", attribute=None, target="nowhere.f"):
        f(x, n=1, outs=[x, x])


class _Placed:
    """An array-like that says where it lives (a GPU array, without needing a GPU)."""

    def __init__(self, platform: str | None) -> None:
        self.shape, self.dtype, self._platform = (3,), np.dtype(np.float32), platform

    def devices(self) -> list[Any]:
        if self._platform is None:
            raise RuntimeError("a tracer has no concrete placement")
        return [SimpleNamespace(platform=self._platform)]


def test_a_cpu_kernel_refuses_inputs_on_another_device() -> None:
    f = function("arg", "arg", "ret", target="nowhere.f")
    x = jnp.ones(3, jnp.float32)
    pattern = (
        r"^nowhere\.f is a C\+\+ \(CPU\) kernel but input 1 lives on \['gpu'\]\. Put the inputs on the CPU "
        r"\(jax\.device_put\(x, jax\.devices\('cpu'\)\[0\]\)\) or run under "
        r"`with jax\.default_device\(jax\.devices\('cpu'\)\[0\]\):`\.$"
    )
    with call_error(pattern, attribute=None, target="nowhere.f"):
        f(x, _Placed("gpu"))
    # An input whose placement cannot be read does not end the check of the ones after it.
    for unreadable in (_Placed(None), object()):
        with call_error(r"but input 1 lives on \['gpu'\]", attribute=None, target="nowhere.f"):
            f(unreadable, _Placed("gpu"))
    # CPU inputs, and inputs whose placement cannot be read (tracers, plain objects), pass
    # the check: here JAX then refuses them as operands.
    for other in (_Placed(None), _Placed("cpu"), object()):
        with pytest.raises(TypeError, match="is not a valid JAX type"):
            f(x, other)


def test_a_cuda_kernel_does_not_check_for_the_cpu() -> None:
    f = function("arg", "ret", target="nowhere.f")
    f = KernelFunction(f.target, f.spec, platform="cuda")
    with pytest.raises(TypeError, match="is not a valid JAX type"):  # past the checks, to JAX
        f(_Placed("gpu"))


def test_module_function_lookup(tmp_path: Path) -> None:
    spec = FunctionSpec("f", (Param(Role.ARG, "x"), Param(Role.RET, "y"), Param(Role.ATTR, "k", "int32")))
    mod = CompiledModule(
        name="m",
        path=tmp_path / "libm.so",
        platform="cuda",
        functions={"f": spec},
        targets={"f": "pre.f"},
        registered=True,
        built_now=False,
        cache_dir=tmp_path,
    )
    assert mod.f is mod.f and mod.f.target == "pre.f" and mod.f.platform == "cuda"
    assert mod.specs == {"f": ["arg", "ret", "attr.k:int32"]}
    assert mod.target_names == ["pre.f"]
    assert "f" in dir(mod) and "specs" in dir(mod)
    with pytest.raises(AttributeError, match=r"module 'm' has no function 'g'; it has \['f'\]"):
        _ = mod.g
    bare = CompiledModule.__new__(CompiledModule)  # before its fields exist (as unpickling sees it)
    with pytest.raises(AttributeError, match=r"module None has no function 'f'; it has \[\]"):
        _ = bare.f


# ------------------------------------------------------------- through a compiled module

KERNELS = r"""
#include "brainevent/common.h"
// @BE half_bits arg ret attr.b:bfloat16 attr.h:float16
void half_bits(const BE::Tensor x, BE::Tensor out, BE::bfloat16 b, BE::float16 h) {
    out.data_ptr<float>()[0] = static_cast<float>(b.bits);
    out.data_ptr<float>()[1] = static_cast<float>(h.bits);
}

// @BE total arg ret
void total(const BE::Tensor x, BE::Tensor out) {
    float sum = 0;
    for (int64_t i = 0; i < x.numel(); ++i) sum += x.data_ptr<float>()[i];
    out.data_ptr<float>()[0] = sum;
}

// @BE plus_minus arg ret ret
void plus_minus(const BE::Tensor x, BE::Tensor plus, BE::Tensor minus) {
    for (int64_t i = 0; i < x.numel(); ++i) {
        plus.data_ptr<float>()[i] = x.data_ptr<float>()[i];
        minus.data_ptr<float>()[i] = -x.data_ptr<float>()[i];
    }
}
"""


@pytest.fixture(scope="module")
def kernels() -> CompiledModule:
    import brainevent

    return brainevent.load_cpp_inline(name="attr_sugar_kernels", cpp_sources=KERNELS)


def test_half_precision_attributes_through_the_call_sugar(kernels: CompiledModule) -> None:
    out = kernels.half_bits(jnp.zeros(2, jnp.float32), b=1.5, h=-2)
    # The handler receives exactly the 16-bit patterns of the converted values.
    expected = [ml_dtypes.bfloat16(1.5).view(np.uint16), np.float16(-2).view(np.uint16)]
    np.testing.assert_array_equal(np.asarray(out), np.array(expected, np.float32))
    with call_error(
        r"attribute 'b' = 1e\+39 is out of range for bfloat16", "b", "attr_sugar_kernels.half_bits"
    ):
        kernels.half_bits(jnp.zeros(2, jnp.float32), b=1e39, h=0)


def test_outs_gives_the_result_shapes(kernels: CompiledModule) -> None:
    x = jnp.arange(5, dtype=jnp.float32)
    out = kernels.total(x, outs=jax.ShapeDtypeStruct((1,), jnp.float32))
    assert out.shape == (1,) and float(out[0]) == 10.0
    plus, minus = kernels.plus_minus(x)  # by default: the first input's shape, per result
    np.testing.assert_array_equal(np.asarray(minus), -np.arange(5))
    results = kernels.plus_minus(x, outs=[x, jax.ShapeDtypeStruct((5,), jnp.float32)])
    assert len(results) == 2
    np.testing.assert_array_equal(np.asarray(results[0]), np.asarray(plus))
    single = kernels.total(x, outs=[jax.ShapeDtypeStruct((1,), jnp.float32)])  # a list gives a list
    assert isinstance(single, (list, tuple)) and len(single) == 1 and float(single[0][0]) == 10.0
    # A pytree of specs, as every kernel kind takes it: the results come back in its shape.
    named = kernels.plus_minus(x, outs={"plus": x, "minus": jax.ShapeDtypeStruct((5,), jnp.float32)})
    assert sorted(named) == ["minus", "plus"]  # flattened in key order, as ret 0 then ret 1
    np.testing.assert_array_equal(np.asarray(named["minus"]), np.asarray(plus))


def test_vmap_method_reaches_the_call(kernels: CompiledModule) -> None:
    batched = KernelFunction(kernels.total.target, kernels.total.spec, vmap_method="sequential")
    xs = jnp.arange(6, dtype=jnp.float32).reshape(2, 3)
    out = jax.vmap(lambda x: batched(x, outs=jax.ShapeDtypeStruct((1,), jnp.float32)))(xs)
    np.testing.assert_array_equal(np.asarray(out), [[3.0], [12.0]])
