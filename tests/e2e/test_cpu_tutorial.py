"""The C++ counterpart of the seeds' CUDA tutorial, compiled with the real host compiler."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent

VECTOR_ADD = r"""
#include "brainevent/common.h"

// @BE vector_add arg arg ret stream
void vector_add(const BE::Tensor a, const BE::Tensor b,
                BE::Tensor out, int64_t stream) {
    BE_CHECK(stream == 0) << "the CPU passes stream 0";
    const float* pa = static_cast<const float*>(a.data_ptr());
    const float* pb = static_cast<const float*>(b.data_ptr());
    float* po = static_cast<float*>(out.data_ptr());
    for (int64_t i = 0; i < a.numel(); ++i) po[i] = pa[i] + pb[i];
}
"""

SCALE_TEMPLATE = r"""
#include "brainevent/common.h"

// @BE scale_by arg ret {attr} stream
void scale_by(const BE::Tensor x, BE::Tensor out,
              float scale_factor, int64_t stream) {{
    const float* px = x.data_ptr<float>();
    float* po = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) po[i] = px[i] * scale_factor;
}}
"""

NAMES = r"""
#include "brainevent/common.h"

void add_one(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i] + 1.0f;
}

void clip(BE::Tensor const x, BE::Tensor out, double lo, double hi) {
    const float* px = x.data_ptr<float>();
    float* po = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) {
        float v = px[i];
        po[i] = v < lo ? (float)lo : (v > hi ? (float)hi : v);
    }
}
"""

MULTI_OUT = r"""
#include "brainevent/common.h"

// @BE minmax_split arg ret ret
void minmax_split(const BE::Tensor x, BE::Tensor lo, BE::Tensor hi) {
    BE_CHECK(x.ndim() == 2) << "expects a matrix, got rank " << x.ndim();
    const int64_t rows = x.size(0), cols = x.size(1);
    const float* px = x.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        float mn = px[r * x.stride(0)], mx = mn;
        for (int64_t c = 0; c < cols; ++c) {
            float v = px[r * x.stride(0) + c * x.stride(1)];
            mn = v < mn ? v : mn;
            mx = v > mx ? v : mx;
        }
        lo.data_ptr<float>()[r] = mn;
        hi.data_ptr<float>()[r] = mx;
    }
}
"""

DISPATCH = r"""
#include "brainevent/common.h"

// @BE square arg ret
void square(const BE::Tensor x, BE::Tensor out) {
    BE_DISPATCH_ALL_TYPES(x.dtype(), scalar_t, {
        const scalar_t* px = x.data_ptr<scalar_t>();
        scalar_t* po = out.data_ptr<scalar_t>();
        for (int64_t i = 0; i < x.numel(); ++i) po[i] = px[i] * px[i];
    });
}
"""


def _call(target: str, like: jax.Array, *args: jax.Array, **attrs: object) -> jax.Array:
    return jax.ffi.ffi_call(target, jax.ShapeDtypeStruct(like.shape, like.dtype))(*args, **attrs)


def test_vector_add_from_annotation_eager_jit_and_sugar() -> None:
    mod = brainevent.load_cpp_inline(name="tut_vector_add", cpp_sources=VECTOR_ADD, functions=None)
    assert mod.target_names == ["tut_vector_add.vector_add"]
    assert mod.specs == {"vector_add": ["arg", "arg", "ret", "stream"]}
    a = jnp.ones(1024, dtype=jnp.float32)
    b = jnp.full(1024, 2.0, dtype=jnp.float32)
    expected = np.full(1024, 3.0, np.float32)
    np.testing.assert_array_equal(_call("tut_vector_add.vector_add", a, a, b), expected)
    jitted = jax.jit(lambda a, b: _call("tut_vector_add.vector_add", a, a, b))
    np.testing.assert_array_equal(jitted(a, b), expected)
    np.testing.assert_array_equal(jax.jit(mod.vector_add)(a, b), expected)
    np.testing.assert_array_equal(mod.vector_add(a, b), expected)


@pytest.mark.parametrize("attr", ["attr.scale_factor:float32", "attr.scale_factor", "attrs.scale_factor"])
def test_scale_by_attribute_forms(attr: str) -> None:
    name = "tut_scale_" + attr.replace(".", "_").replace(":", "_")
    mod = brainevent.load_cpp_inline(name=name, cpp_sources=SCALE_TEMPLATE.format(attr=attr))
    assert mod.specs["scale_by"] == ["arg", "ret", "attr.scale_factor:float32", "stream"]
    x = jnp.arange(16, dtype=jnp.float32)
    target = f"{name}.scale_by"
    for value in (np.float32(3.0), 3.0, 3):  # the seeds' form, a Python float, a Python int
        np.testing.assert_allclose(_call(target, x, x, scale_factor=value), np.arange(16) * 3.0)
    jitted = jax.jit(lambda x: _call(target, x, x, scale_factor=0.5))
    np.testing.assert_allclose(jitted(x), np.arange(16) * 0.5)
    np.testing.assert_allclose(mod.scale_by(x, scale_factor=-2.0), np.arange(16) * -2.0)


def test_list_of_names_infers_specs() -> None:
    mod = brainevent.load_cpp_inline(name="tut_names", cpp_sources=NAMES, functions=["add_one", "clip"])
    assert mod.specs == {
        "add_one": ["arg", "ret"],
        "clip": ["arg", "ret", "attr.lo:float64", "attr.hi:float64"],
    }
    x = jnp.linspace(-2, 2, 9, dtype=jnp.float32)
    np.testing.assert_allclose(_call("tut_names.add_one", x, x), np.asarray(x) + 1)
    np.testing.assert_allclose(
        jax.jit(lambda x: _call("tut_names.clip", x, x, lo=-1.0, hi=0.5))(x),
        np.clip(np.asarray(x), -1, 0.5),
    )
    np.testing.assert_allclose(mod.clip(x, lo=-1, hi=1), np.clip(np.asarray(x), -1, 1))


def test_multiple_outputs() -> None:
    mod = brainevent.load_cpp_inline(name="tut_multi", cpp_sources=MULTI_OUT)
    x = jnp.asarray(np.random.default_rng(0).normal(size=(5, 7)).astype(np.float32))
    row = jax.ShapeDtypeStruct((5,), jnp.float32)
    lo, hi = jax.ffi.ffi_call("tut_multi.minmax_split", (row, row))(x)
    np.testing.assert_array_equal(lo, np.asarray(x).min(axis=1))
    np.testing.assert_array_equal(hi, np.asarray(x).max(axis=1))
    lo2, hi2 = jax.jit(lambda x: mod.minmax_split(x, outs=[row, row]))(x)
    np.testing.assert_array_equal(lo2, lo)
    np.testing.assert_array_equal(hi2, hi)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8, np.int8])
def test_dtype_dispatch(dtype: type) -> None:
    mod = brainevent.load_cpp_inline(name="tut_dispatch", cpp_sources=DISPATCH)
    x = (
        np.arange(-5, 6).astype(dtype)
        if np.issubdtype(dtype, np.signedinteger) or np.issubdtype(dtype, np.floating)
        else np.arange(0, 11).astype(dtype)
    )
    with jax.enable_x64(True):  # so float64/int64 stay 64-bit
        result = jax.jit(mod.square)(jnp.asarray(x))
    assert result.dtype == x.dtype
    np.testing.assert_array_equal(result, x * x)


def test_dispatch_rejects_unsupported_dtype() -> None:
    mod = brainevent.load_cpp_inline(name="tut_dispatch", cpp_sources=DISPATCH)
    x = jnp.ones(4, dtype=jnp.complex64)
    with pytest.raises(
        jax.errors.JaxRuntimeError,
        match=r"BE_DISPATCH_ALL_TYPES: unsupported dtype complex64 \(expected one of",
    ):
        mod.square(x).block_until_ready()


NAMESPACED = r"""
#include <cstddef>
#include "brainevent/common.h"
namespace ops {
namespace detail { inline float twice(float v) { return 2.0f * v; } }
// @BE doubled arg ret stream
void doubled(const BE::Tensor x, BE::Tensor out, size_t stream) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = detail::twice(x.data_ptr<float>()[i]);
}
}  // namespace ops
namespace {
// @BE tripled arg ret
void tripled(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = 3.0f * x.data_ptr<float>()[i];
}
}  // namespace
"""


def test_entry_points_in_namespaces_and_unsigned_stream() -> None:
    mod = brainevent.load_cpp_inline(name="tut_namespaced", cpp_sources=NAMESPACED)
    assert mod.functions["doubled"].scope == "ops" and mod.functions["tripled"].scope == ""
    x = jnp.arange(4, dtype=jnp.float32)
    np.testing.assert_array_equal(mod.doubled(x), 2 * np.arange(4))
    np.testing.assert_array_equal(mod.tripled(x), 3 * np.arange(4))
