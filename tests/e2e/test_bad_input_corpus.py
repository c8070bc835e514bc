"""A corpus of bad input. Each case must raise a typed error whose message names the bad
value; none may crash, abort or hang the process.

Load-time cases run through the real loaders (specs are checked before compiling);
call-time cases call a compiled module with wrong operands and attributes.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent import CompileError, KernelCallError, SpecError

GOOD = r"""
#include "brainevent/common.h"
void scale(const BE::Tensor x, BE::Tensor out, float factor, int32_t count) {
    BE_CHECK(x.ndim() == 1) << "scale expects a vector, got rank " << x.ndim();
    BE_CHECK(x.size(0) == out.size(0)) << "x and out differ: " << x.size(0) << " vs " << out.size(0);
    const float* px = x.data_ptr<float>();
    float* po = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) po[i] = px[i] * factor + count;
}
"""

NO_OUTPUT = r"""
#include "brainevent/common.h"
void probe(const BE::Tensor x, int32_t n) {}
"""

# (label, keyword arguments of load_cpp_inline, error type, text the message must contain)
LOAD_CASES: list[tuple[str, dict[str, Any], type[Exception], str]] = [
    (
        "unknown token",
        {"functions": {"scale": ["arg", "ret", "atr.factor", "attr.count"]}},
        SpecError,
        "atr.factor",
    ),
    (
        "typo type",
        {"functions": {"scale": ["arg", "ret", "attr.factor:flaot32", "attr.count"]}},
        SpecError,
        "flaot32",
    ),
    (
        "wrong attr type",
        {"functions": {"scale": ["arg", "ret", "attr.factor:float64", "attr.count"]}},
        SpecError,
        "float64",
    ),
    ("too few tokens", {"functions": {"scale": ["arg", "ret"]}}, SpecError, "scale"),
    (
        "too many tokens",
        {"functions": {"scale": ["arg", "ret", "attr.a", "attr.b", "stream"]}},
        SpecError,
        "scale",
    ),
    ("ret for a scalar", {"functions": {"scale": ["arg", "ret", "ret", "attr.count"]}}, SpecError, "factor"),
    (
        "attr for a tensor",
        {"functions": {"scale": ["attr.x", "ret", "attr.factor", "attr.count"]}},
        SpecError,
        "x",
    ),
    (
        "stream for float",
        {"functions": {"scale": ["arg", "ret", "stream", "attr.count"]}},
        SpecError,
        "factor",
    ),
    ("two streams", {"functions": {"scale": ["arg", "ret", "stream", "stream"]}}, SpecError, "stream"),
    ("duplicate attr", {"functions": {"scale": ["arg", "ret", "attr.a", "attr.a"]}}, SpecError, "'a'"),
    ("empty token", {"functions": {"scale": ["arg", "", "attr.factor", "attr.count"]}}, SpecError, "''"),
    ("non-string token", {"functions": {"scale": ["arg", 3, "attr.factor", "attr.count"]}}, SpecError, "3"),
    ("bad attr name", {"functions": {"scale": ["arg", "ret", "attr.9x", "attr.count"]}}, SpecError, "9x"),
    (
        "attr name keyword",
        {"functions": {"scale": ["arg", "ret", "attr.class", "attr.count"]}},
        SpecError,
        "class",
    ),
    ("missing function", {"functions": {"scael": ["arg", "ret"]}}, SpecError, "scael"),
    ("function with slash", {"functions": {"../scale": ["arg", "ret"]}}, SpecError, "../scale"),
    ("function with semicolon", {"functions": {"scale;rm": ["arg"]}}, SpecError, "scale;rm"),
    ("functions of wrong type", {"functions": 42}, SpecError, "42"),
    ("list of non-names", {"functions": ["scale", 7]}, SpecError, "7"),
    ("no annotations", {"functions": None}, SpecError, "@BE"),
    ("bad module name slash", {"name": "a/b"}, SpecError, "'a/b'"),
    ("bad module name dots", {"name": ".."}, SpecError, "'..'"),
    ("bad module name shell", {"name": "x$(id)"}, SpecError, "x$(id)"),
    ("bad module name empty", {"name": ""}, SpecError, "''"),
    ("bad module name type", {"name": 5}, SpecError, "5"),
    ("bad prefix", {"target_prefix": "a b"}, SpecError, "'a b'"),
    ("opt level 4", {"optimization_level": 4}, SpecError, "optimization_level=4"),
    ("opt level -1", {"optimization_level": -1}, SpecError, "optimization_level=-1"),
    ("opt level str", {"optimization_level": "3"}, SpecError, "optimization_level='3'"),
    ("opt level bool", {"optimization_level": True}, SpecError, "optimization_level=True"),
    ("cflags as str", {"extra_cflags": "-O2"}, SpecError, "-O2"),
    ("cflags non-str", {"extra_cflags": ["-O2", 3]}, SpecError, "extra_cflags"),
    ("ldflags as str", {"extra_ldflags": "-lm"}, SpecError, "-lm"),
    ("include paths str", {"extra_include_paths": "/usr/include"}, SpecError, "/usr/include"),
    ("bad compiler flag", {"extra_cflags": ["--no-such-flag-xyz"]}, CompileError, "--no-such-flag-xyz"),
    ("sources of wrong type", {"cpp_sources": 123}, SpecError, "int"),
    (
        "source does not compile",
        {"cpp_sources": GOOD.replace("po[i] =", "po[i] = undefined_name +")},
        CompileError,
        "undefined_name",
    ),
    (
        "source with syntax error",
        {"cpp_sources": GOOD.replace("{\n    BE_CHECK", "{{\n    BE_CHECK")},
        CompileError,
        "error",
    ),
    (
        "unmappable param type",
        {"cpp_sources": GOOD.replace("float factor", "float* factor"), "functions": ["scale"]},
        SpecError,
        "factor",
    ),
    (
        "unsupported container",
        {"cpp_sources": GOOD.replace("float factor", "std::vector<float> factor"), "functions": ["scale"]},
        SpecError,
        "factor",
    ),
    (
        "const ret",
        {
            "cpp_sources": GOOD.replace("BE::Tensor out", "const BE::Tensor out"),
            "functions": {"scale": ["arg", "ret", "attr.factor", "attr.count"]},
        },
        SpecError,
        "out",
    ),
    (
        "annotation typo",
        {"cpp_sources": "// @BE scale arg rett attr.factor attr.count\n" + GOOD, "functions": None},
        SpecError,
        "rett",
    ),
    (
        "duplicate annotation",
        {"cpp_sources": "// @BE scale\n// @BE scale\n" + GOOD, "functions": None},
        SpecError,
        "scale",
    ),
    (
        "template entry",
        {
            "cpp_sources": '#include "brainevent/common.h"\ntemplate <typename T> void tpl(const '
            "BE::Tensor x, BE::Tensor out) {}\n",
            "functions": ["tpl"],
        },
        SpecError,
        "tpl",
    ),
    (
        "overloads",
        {"cpp_sources": GOOD + "void scale(const BE::Tensor x, BE::Tensor out) {}\n", "functions": ["scale"]},
        SpecError,
        "scale",
    ),
    (
        "no output, explicit spec",
        {"cpp_sources": NO_OUTPUT, "functions": {"probe": ["arg", "attr.n"]}},
        SpecError,
        "probe (corpus_no_output__explicit_spec.cpp:3): the arg_spec from functions=, "
        "['arg', 'attr.n'], has no output: an entry point needs at least one 'ret'",
    ),
    (
        "no output, inferred",
        {"cpp_sources": NO_OUTPUT, "functions": ["probe"]},
        SpecError,
        "the spec inferred from its signature, ['arg', 'attr.n:int32'], has no output: an entry point "
        "needs at least one 'ret'",
    ),
    (
        "no output, annotation",
        {"cpp_sources": "// @BE probe arg attr.n\n" + NO_OUTPUT, "functions": None},
        SpecError,
        "the arg_spec from '@BE' at corpus_no_output__annotation.cpp:1",
    ),
    (
        "cflag with line break",
        {"extra_cflags": ["-DA=1\n-DB=2"]},
        SpecError,
        "extra_cflags entry '-DA=1\\n-DB=2' contains a line break",
    ),
    ("ldflag with carriage return", {"extra_ldflags": ["-lm\r"]}, SpecError, "contains a line break"),
    ("include path with line break", {"extra_include_paths": ["/tmp/a\nb"]}, SpecError, "'/tmp/a\\nb'"),
    ("cflag with NUL", {"extra_cflags": ["-DA\0"]}, SpecError, "contains a NUL character"),
    (
        "cflag with lone surrogate",
        {"extra_cflags": ["-DA=\ud800"]},
        SpecError,
        "'\\ud800', a lone surrogate, at position 4",
    ),
    (
        "lone surrogate in source",
        {"cpp_sources": GOOD.replace("for (int64_t", "/* \udc80 */ for (int64_t")},
        SpecError,
        "cpp_sources has a lone surrogate U+DC80 at line 8, column 8",
    ),
    (
        "lone surrogate in a list of sources",
        {"cpp_sources": ["// header", "// \ud800", GOOD]},
        SpecError,
        "U+D800 at line 2, column 4",
    ),
    ("replace not a bool", {"replace": "yes"}, SpecError, "replace='yes' must be True or False"),
]


@pytest.mark.parametrize(("label", "kwargs", "error", "needle"), LOAD_CASES, ids=[c[0] for c in LOAD_CASES])
def test_load_time_bad_input(label: str, kwargs: dict[str, Any], error: type[Exception], needle: str) -> None:
    arguments: dict[str, Any] = {
        "name": "corpus_" + "".join(c if c.isalnum() else "_" for c in label),
        "cpp_sources": GOOD,
        "functions": {"scale": ["arg", "ret", "attr.factor", "attr.count"]},
        "auto_register": False,
    }
    arguments.update(kwargs)
    with pytest.raises(error) as info:
        brainevent.load_cpp_inline(**arguments)
    assert needle in str(info.value), str(info.value)


@pytest.fixture(scope="module")
def scale_mod() -> brainevent.CompiledModule:
    return brainevent.load_cpp_inline(
        name="corpus_calls",
        cpp_sources=GOOD,
        functions={"scale": ["arg", "ret", "attr.factor", "attr.count"]},
    )


def _raw(x: Any, **attrs: Any) -> np.ndarray:
    shape = getattr(x, "shape", (3,))
    dtype = getattr(x, "dtype", jnp.float32)
    return np.asarray(jax.ffi.ffi_call("corpus_calls.scale", jax.ShapeDtypeStruct(shape, dtype))(x, **attrs))


def _one() -> jax.Array:
    return jnp.ones(3, jnp.float32)  # made per call: on the default device of the running test


# (label, callable taking the module, error type, text the message must contain)
CALL_CASES: list[tuple[str, Any, type[Exception], str]] = [
    ("sugar: no operands", lambda m: m.scale(factor=1.0, count=1), KernelCallError, "expected 1 input"),
    ("sugar: two operands", lambda m: m.scale(_one(), _one(), factor=1.0, count=1), KernelCallError, "got 2"),
    ("sugar: missing attr", lambda m: m.scale(_one(), factor=1.0), KernelCallError, "count"),
    ("sugar: extra attr", lambda m: m.scale(_one(), factor=1.0, count=1, bias=2), KernelCallError, "bias"),
    (
        "sugar: int32 overflow",
        lambda m: m.scale(_one(), factor=1.0, count=2**31),
        KernelCallError,
        "2147483648",
    ),
    (
        "sugar: int32 underflow",
        lambda m: m.scale(_one(), factor=1.0, count=-(2**31) - 1),
        KernelCallError,
        "-2147483649",
    ),
    ("sugar: float for int", lambda m: m.scale(_one(), factor=1.0, count=1.5), KernelCallError, "1.5"),
    ("sugar: str attr", lambda m: m.scale(_one(), factor="big", count=1), KernelCallError, "'big'"),
    ("sugar: bool for float", lambda m: m.scale(_one(), factor=True, count=1), KernelCallError, "True"),
    ("sugar: float32 overflow", lambda m: m.scale(_one(), factor=1e39, count=1), KernelCallError, "1e+39"),
    (
        "sugar: array attr",
        lambda m: m.scale(_one(), factor=np.ones(2), count=1),
        KernelCallError,
        "shape (2,)",
    ),
    (
        "sugar: outs count",
        lambda m: m.scale(_one(), factor=1.0, count=1, outs=[_one(), _one()]),
        KernelCallError,
        "got 2",
    ),
    ("sugar: outs type", lambda m: m.scale(_one(), factor=1.0, count=1, outs=[3]), KernelCallError, "3"),
    (
        "raw: int overflow",
        lambda m: _raw(_one(), factor=1.0, count=2**40),
        jax.errors.JaxRuntimeError,
        "1099511627776",
    ),
    (
        "raw: missing attr",
        lambda m: _raw(_one(), factor=1.0),
        jax.errors.JaxRuntimeError,
        "missing attribute 'count'",
    ),
    (
        "raw: unknown attr",
        lambda m: _raw(_one(), factor=1.0, count=1, gain=2),
        jax.errors.JaxRuntimeError,
        "gain",
    ),
    ("raw: float for int", lambda m: _raw(_one(), factor=1.0, count=2.5), jax.errors.JaxRuntimeError, "2.5"),
    (
        "raw: float32 overflow",
        lambda m: _raw(_one(), factor=1e300, count=1),
        jax.errors.JaxRuntimeError,
        "1e+300",
    ),
    (
        "raw: wrong dtype",
        lambda m: _raw(jnp.ones(3, jnp.int32), factor=1.0, count=1),
        jax.errors.JaxRuntimeError,
        "data_ptr<float32>() on a tensor of dtype int32",
    ),
    (
        "raw: wrong rank",
        lambda m: _raw(jnp.ones((2, 2), jnp.float32), factor=1.0, count=1),
        jax.errors.JaxRuntimeError,
        "scale expects a vector, got rank 2",
    ),
    (
        "raw: wrong shape",
        lambda m: np.asarray(
            jax.ffi.ffi_call("corpus_calls.scale", jax.ShapeDtypeStruct((5,), jnp.float32))(
                _one(), factor=1.0, count=1
            )
        ),
        jax.errors.JaxRuntimeError,
        "x and out differ: 3 vs 5",
    ),
    (
        "raw: two operands",
        lambda m: np.asarray(
            jax.ffi.ffi_call("corpus_calls.scale", jax.ShapeDtypeStruct((3,), jnp.float32))(
                _one(), _one(), factor=1.0, count=1
            )
        ),
        jax.errors.JaxRuntimeError,
        "got 2 input(s)",
    ),
    (
        "raw: unsupported dtype",
        lambda m: _raw(jnp.ones(3, jnp.float8_e4m3fn), factor=1.0, count=1),
        jax.errors.JaxRuntimeError,
        "does not support",
    ),
]


@pytest.mark.parametrize(("label", "call", "error", "needle"), CALL_CASES, ids=[c[0] for c in CALL_CASES])
def test_call_time_bad_input(
    scale_mod: brainevent.CompiledModule, label: str, call: Any, error: type[Exception], needle: str
) -> None:
    with pytest.raises(error) as info:
        call(scale_mod)
    assert needle in str(info.value), str(info.value)
    # The process and the kernel survive.
    np.testing.assert_allclose(np.asarray(scale_mod.scale(_one(), factor=2.0, count=1)), np.full(3, 3.0))


def test_corpus_size() -> None:
    assert len(LOAD_CASES) + len(CALL_CASES) >= 50


TWICE = r"""
void twice(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = 2 * x.data_ptr<float>()[i];
}
"""


def test_functions_dict_value_none_infers_the_spec() -> None:
    # {"f": None} means "infer f's spec from its C++ signature", as listing "f" does.
    mod = brainevent.load_cpp_inline(
        name="corpus_dict_none",
        cpp_sources=GOOD + TWICE,
        functions={"scale": None, "twice": ["arg", "ret"]},
    )
    assert mod.specs == {
        "scale": ["arg", "ret", "attr.factor:float32", "attr.count:int32"],
        "twice": ["arg", "ret"],
    }
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(mod.scale(jnp.asarray(x), factor=1.5, count=2)), x * 1.5 + 2)
    np.testing.assert_allclose(np.asarray(mod.twice(jnp.asarray(x))), 2 * x)


COMPLEX = r"""
#include <complex>
#include "brainevent/common.h"
void affine(const BE::Tensor x, BE::Tensor out, std::complex<float> a, std::complex<double> b) {
    const auto* px = x.data_ptr<std::complex<float>>();
    auto* po = out.data_ptr<std::complex<float>>();
    for (int64_t i = 0; i < x.numel(); ++i) po[i] = px[i] * a + std::complex<float>(b);
}
"""


@pytest.fixture(scope="module")
def complex_mod() -> brainevent.CompiledModule:
    return brainevent.load_cpp_inline(name="corpus_complex", cpp_sources=COMPLEX, functions=["affine"])


def _complex_x() -> np.ndarray:
    return (np.arange(4) + 1j * np.arange(4)[::-1]).astype(np.complex64)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (1 + 2j, -0.5j),
        (np.complex64(3 - 1j), np.complex128(2 + 2j)),
        (np.complex128(0.5 + 0.25j), np.complex64(-1 + 0j)),
        (2.5, 3),  # real values for complex attributes
        (np.float32(0.25), np.int64(-7)),
        (np.float64(-1.0), np.uint8(4)),
    ],
    ids=["python", "numpy-complex", "numpy-complex-swapped", "python-real", "numpy-real", "numpy-real-uint"],
)
def test_complex_attributes_through_the_call_sugar(
    complex_mod: brainevent.CompiledModule, a: Any, b: Any
) -> None:
    x = _complex_x()
    expected = x * np.complex64(a) + np.complex64(np.complex128(b))
    got = complex_mod.affine(jnp.asarray(x), a=a, b=b)
    assert got.dtype == jnp.complex64
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-6)
    jitted = jax.jit(lambda v: complex_mod.affine(v, a=a, b=b))
    np.testing.assert_allclose(np.asarray(jitted(jnp.asarray(x))), expected, rtol=1e-6)


def test_complex_attribute_through_a_raw_ffi_call(complex_mod: brainevent.CompiledModule) -> None:
    # MLIR has no complex scalar attribute: a raw call passes [re, im] as a float array.
    x = _complex_x()
    call = jax.ffi.ffi_call("corpus_complex.affine", jax.ShapeDtypeStruct(x.shape, x.dtype))
    got = call(jnp.asarray(x), a=np.array([1.0, -2.0], np.float32), b=np.array([0.5, 0.5], np.float64))
    np.testing.assert_allclose(
        np.asarray(got), x * np.complex64(1 - 2j) + np.complex64(0.5 + 0.5j), rtol=1e-6
    )
    with pytest.raises(
        jax.errors.JaxRuntimeError,
        match=r"attribute 'a' \(complex64\) takes a real scalar or a float32/float64 array \[re, im\] of 2 "
        r"elements; got an array of 3 element\(s\)",
    ):
        np.asarray(call(jnp.asarray(x), a=np.array([1.0, 2.0, 3.0], np.float32), b=0.0))
    with pytest.raises(
        jax.errors.JaxRuntimeError, match=r"array \[re, im\] of 2 elements; got an array of 2"
    ):
        np.asarray(call(jnp.asarray(x), a=np.array([1, 2], np.int32), b=0.0))


@pytest.mark.parametrize(
    ("attrs", "needle"),
    [
        ({"a": True, "b": 0}, "attribute 'a' expects complex64, got True (bool)"),
        ({"a": "1+2j", "b": 0}, "attribute 'a' expects complex64, got '1+2j' (str)"),
        ({"a": 1e39 + 0j, "b": 0}, "attribute 'a' = (1e+39+0j) is out of range for complex64"),
        ({"a": complex(0, -1e39), "b": 0}, "out of range for complex64"),
        ({"a": 1, "b": [1, 2]}, "attribute 'b' expects complex128, got [1, 2] (list)"),
    ],
    ids=["bool", "str", "real-overflow", "imag-overflow", "list"],
)
def test_bad_complex_attributes(
    complex_mod: brainevent.CompiledModule, attrs: dict[str, Any], needle: str
) -> None:
    with pytest.raises(KernelCallError) as info:
        complex_mod.affine(jnp.asarray(_complex_x()), **attrs)
    assert needle in str(info.value), str(info.value)


def test_complex_attribute_nonfinite_values_pass_through(complex_mod: brainevent.CompiledModule) -> None:
    x = np.ones(2, np.complex64)
    got = np.asarray(complex_mod.affine(jnp.asarray(x), a=complex(np.inf, 0), b=0))
    assert np.isinf(got.real).all()
