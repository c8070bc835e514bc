"""Kernels written against brainevent 0.2.1's headers, compiled by g++ and run through JAX.

The sources use the statement form of the dispatch macros
(``BE_DISPATCH_X(dtype, alias, { ... })``), the 0.2.1 element types and helpers; results
are compared with NumPy, and an unsupported dtype must come back as a Python error.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import brainevent

# In the style of a kernel written for 0.2.1: void* casts, explicit aliases, int sizes.
KERNELS = r"""
#include "brainevent/common.h"

// @BE twice arg ret
void twice(const BE::Tensor x, BE::Tensor out) {
    const int n = x.numel_checked_int();
    BE_DISPATCH_ALL_TYPES(x.dtype(), scalar_t, {
        const scalar_t* px = static_cast<const scalar_t*>(x.data_ptr());
        scalar_t* po = out.data_ptr<scalar_t>();
        for (int i = 0; i < n; ++i) po[i] = static_cast<scalar_t>(px[i] + px[i]);
    });
}

// @BE halve arg ret
void halve(const BE::Tensor x, BE::Tensor out) {
    BE_DISPATCH_FLOATING(x.dtype(), real_t, {
        const real_t* px = x.data_ptr<const real_t>();
        real_t* po = out.data_ptr<real_t>();
        for (int64_t i = 0; i < x.numel(); ++i) po[i] = px[i] / real_t(2);
    });
}

// @BE halve_or_half arg ret
void halve_or_half(const BE::Tensor x, BE::Tensor out) {
    // Host-only code: the half cases are left out, as in 0.2.1.
    BE_DISPATCH_FLOATING_AND_HALF(x.dtype(), real_t, {
        for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<real_t>()[i] = x.data_ptr<real_t>()[i] / 2;
    });
}

// @BE bits_mod7 arg ret
void bits_mod7(const BE::Tensor x, BE::Tensor out) {
    BE_DISPATCH_INTEGRAL(x.dtype(), int_t, {
        const int_t* px = x.data_ptr<int_t>();
        int_t* po = out.data_ptr<int_t>();
        for (int64_t i = 0; i < x.numel(); ++i) po[i] = static_cast<int_t>(px[i] % 7);
    });
}

// @BE conj arg ret
void conj(const BE::Tensor x, BE::Tensor out) {
    BE_DISPATCH_COMPLEX(x.dtype(), c_t, {
        const c_t* px = x.data_ptr<c_t>();
        c_t* po = out.data_ptr<c_t>();
        for (int64_t i = 0; i < x.numel(); ++i) po[i] = c_t{px[i].real, -px[i].imag};
    });
}

// Every dtype: reverse the bytes of each element's storage order (a pure data move, so
// it works for the raw-bits half types too).
// @BE reverse arg ret
void reverse(const BE::Tensor x, BE::Tensor out) {
    BE_DISPATCH_ALL(x.dtype(), any_t, {
        const any_t* px = x.data_ptr<any_t>();
        any_t* po = out.data_ptr<any_t>();
        const int64_t n = x.numel();
        for (int64_t i = 0; i < n; ++i) po[i] = px[n - 1 - i];
    });
}

// CSR row lengths: indptr int32 or int64, output in the indices' dtype.
// @BE row_lengths arg ret
void row_lengths(const BE::Tensor indptr, BE::Tensor out) {
    BE_DISPATCH_SIGNED_INDEX_PAIR(indptr.dtype(), out.dtype(), ptr_t, len_t, {
        const ptr_t* p = indptr.data_ptr<ptr_t>();
        len_t* o = out.data_ptr<len_t>();
        for (int64_t r = 0; r + 1 < indptr.numel(); ++r) o[r] = static_cast<len_t>(p[r + 1] - p[r]);
    });
}

// @BE csr_nnz arg arg ret
void csr_nnz(const BE::Tensor indptr, const BE::Tensor indices, BE::Tensor out) {
    BE_CHECK_CSR_INDICES_INT32(indices);
    BE_DISPATCH_CSR_INDPTR(indptr.dtype(), ptr_t, {
        const ptr_t* p = indptr.data_ptr<ptr_t>();
        out.data_ptr<int64_t>()[0] = static_cast<int64_t>(p[indptr.numel() - 1]);
    });
}

// @BE index_bytes arg ret
void index_bytes(const BE::Tensor x, BE::Tensor out) {
    int64_t size = 0;
    BE_DISPATCH_SIGNED_INDEX(x.dtype(), idx_t, { size = sizeof(idx_t); });
    out.data_ptr<int64_t>()[0] = size * 100 + static_cast<int64_t>(BE::dtype_size(x.dtype()));
}

// The lambda form, kept beside it: a value, an operation name in errors.
// @BE total arg ret
void total(const BE::Tensor x, BE::Tensor out) {
    out.data_ptr<double>()[0] = BE_DISPATCH_ALL_TYPES_FN(x.dtype(), "total", [&] {
        double s = 0;
        for (int64_t i = 0; i < x.numel(); ++i) s += static_cast<double>(x.data_ptr<scalar_t>()[i]);
        return s;
    });
}

// The exception classes of 0.2.1 can be caught by kernel code.
// @BE catch_kinds ret
void catch_kinds(BE::Tensor out) {
    int64_t* o = out.data_ptr<int64_t>();
    try { BE_CHECK(out.numel() < 0) << "no"; } catch (const BE::CheckError&) { o[0] = 1; }
    try { BE_FAIL() << "plain"; }
    catch (const BE::CheckError&) { o[1] = -1; }
    catch (const BE::Error&) { o[1] = 2; }
    try { (void)out.data_ptr<float>(); } catch (const std::runtime_error&) { o[2] = 3; }
}
"""


@pytest.fixture(scope="module")
def mod() -> brainevent.CompiledModule:
    return brainevent.load_cpp_inline(name="compat_headers_cpu", cpp_sources=KERNELS)


def _run(mod: brainevent.CompiledModule, fn: str, *args: np.ndarray, out: jax.ShapeDtypeStruct) -> np.ndarray:
    return np.asarray(getattr(mod, fn)(*(jnp.asarray(a) for a in args), outs=out))


def _like(x: np.ndarray) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(x.shape, x.dtype)


ALL_TYPES = [np.float32, np.float64, np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8]
ALL_TYPES += [np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("dtype", ALL_TYPES)
def test_dispatch_all_types_statement_form(mod: brainevent.CompiledModule, dtype: type) -> None:
    x = (np.arange(12) % 5 == 1).astype(dtype) if dtype is np.bool_ else np.arange(-6, 6).astype(dtype)
    with jax.enable_x64(True):
        got = _run(mod, "twice", x, out=_like(x))
    expected = (x | x) if dtype is np.bool_ else (x + x).astype(dtype)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dispatch_floating_names_its_own_alias(mod: brainevent.CompiledModule, dtype: type) -> None:
    x = np.linspace(-3, 3, 7).astype(dtype)
    with jax.enable_x64(True):
        np.testing.assert_array_equal(_run(mod, "halve", x, out=_like(x)), x / 2)
        np.testing.assert_array_equal(_run(mod, "halve_or_half", x, out=_like(x)), x / 2)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int64, np.uint16, np.uint64])
def test_dispatch_integral_includes_bool(mod: brainevent.CompiledModule, dtype: type) -> None:
    x = np.array([True, False, True]) if dtype is np.bool_ else np.arange(0, 20).astype(dtype)
    with jax.enable_x64(True):
        got = _run(mod, "bits_mod7", x, out=_like(x))
    np.testing.assert_array_equal(got, x if dtype is np.bool_ else x % 7)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_dispatch_complex_uses_real_imag_pairs(mod: brainevent.CompiledModule, dtype: type) -> None:
    x = (np.arange(5) + 1j * np.arange(5, 10)).astype(dtype)
    with jax.enable_x64(True):
        np.testing.assert_array_equal(_run(mod, "conj", x, out=_like(x)), np.conj(x))


EVERY_TYPE = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.bool_, np.int8, np.uint32]
EVERY_TYPE += [np.int64, np.complex64, np.complex128]


@pytest.mark.parametrize("dtype", EVERY_TYPE)
def test_dispatch_all_moves_every_dtype(mod: brainevent.CompiledModule, dtype: type) -> None:
    x = np.arange(9).astype(dtype) if dtype is not np.bool_ else np.arange(9) % 2 == 0
    if np.issubdtype(np.dtype(dtype), np.complexfloating):
        x = x * (1 + 2j)
    with jax.enable_x64(True):
        got = _run(mod, "reverse", x, out=_like(x))
    np.testing.assert_array_equal(got.view(np.uint8), np.ascontiguousarray(x[::-1]).view(np.uint8))


@pytest.mark.parametrize(("ptr", "out"), [(np.int32, np.int32), (np.int32, np.int64), (np.int64, np.int32)])
def test_signed_index_pair_binds_both_aliases(mod: brainevent.CompiledModule, ptr: type, out: type) -> None:
    indptr = np.array([0, 2, 2, 7, 8], dtype=ptr)
    with jax.enable_x64(True):
        got = _run(mod, "row_lengths", indptr, out=jax.ShapeDtypeStruct((4,), out))
    assert got.dtype == out
    np.testing.assert_array_equal(got, np.diff(indptr))


@pytest.mark.parametrize("ptr", [np.int32, np.int64])
def test_csr_indptr_and_index_dispatch(mod: brainevent.CompiledModule, ptr: type) -> None:
    indptr = np.array([0, 3, 5], dtype=ptr)
    with jax.enable_x64(True):
        nnz = _run(mod, "csr_nnz", indptr, np.zeros(5, np.int32), out=jax.ShapeDtypeStruct((1,), np.int64))
        sizes = _run(mod, "index_bytes", indptr, out=jax.ShapeDtypeStruct((1,), np.int64))
    assert nnz[0] == 5
    width = np.dtype(ptr).itemsize
    assert sizes[0] == width * 100 + width


def test_csr_indices_must_be_int32(mod: brainevent.CompiledModule) -> None:
    with (
        jax.enable_x64(True),
        pytest.raises(jax.errors.JaxRuntimeError, match=r"CSR kernels need int32 column indices, got int64"),
    ):
        _run(
            mod, "csr_nnz", np.array([0, 1]), np.zeros(1, np.int64), out=jax.ShapeDtypeStruct((1,), np.int64)
        )


@pytest.mark.parametrize(
    ("fn", "dtype", "message"),
    [
        (
            "halve",
            np.int32,
            r"BE_DISPATCH_FLOATING: unsupported dtype int32 \(expected one of float32, float64\)",
        ),
        (
            "halve_or_half",
            np.float16,
            r"BE_DISPATCH_FLOATING_AND_HALF: unsupported dtype float16 \(expected one of float32, float64\)",
        ),
        ("twice", np.complex64, r"BE_DISPATCH_ALL_TYPES: unsupported dtype complex64 \(expected one of"),
        ("bits_mod7", np.float32, r"BE_DISPATCH_INTEGRAL: unsupported dtype float32"),
        ("conj", np.float64, r"BE_DISPATCH_COMPLEX: unsupported dtype float64"),
        (
            "index_bytes",
            np.int16,
            r"BE_DISPATCH_SIGNED_INDEX: unsupported dtype int16 \(expected one of int32, int64\)",
        ),
        ("total", np.complex64, r"total: unsupported dtype complex64"),
    ],
)
def test_unsupported_dtype_is_a_python_error(
    mod: brainevent.CompiledModule, fn: str, dtype: type, message: str
) -> None:
    x = np.ones(3, dtype=dtype)
    out = jax.ShapeDtypeStruct((1,), np.int64) if fn in ("index_bytes",) else _like(x)
    if fn == "total":
        out = jax.ShapeDtypeStruct((1,), np.float64)
    with jax.enable_x64(True), pytest.raises(jax.errors.JaxRuntimeError, match=message):
        _run(mod, fn, x, out=out)
    # The process survived: the module still works.
    np.testing.assert_array_equal(
        _run(mod, "halve", np.ones(2, np.float32), out=_like(np.ones(2, np.float32))), 0.5
    )


def test_lambda_form_returns_its_value(mod: brainevent.CompiledModule) -> None:
    x = np.arange(10, dtype=np.int16)
    with jax.enable_x64(True):
        got = _run(mod, "total", x, out=jax.ShapeDtypeStruct((1,), np.float64))
    assert got[0] == x.sum()


def test_check_errors_are_catchable_as_0_2_1_classes(mod: brainevent.CompiledModule) -> None:
    with jax.enable_x64(True):
        got = _run(mod, "catch_kinds", out=jax.ShapeDtypeStruct((3,), np.int64))
    np.testing.assert_array_equal(got, [1, 2, 3])


def test_numel_checked_int_refuses_counts_past_int_max(gxx: str, tmp_path: Path) -> None:
    program = tmp_path / "big.cpp"
    program.write_text(
        r"""
        #include "brainevent/common.h"
        int main() {
            int64_t shape[2] = {65536, 32768}, strides[2] = {32768, 1};
            BE::Tensor t(nullptr, BE::DType::Float32, 2, shape, strides);
            try { (void)t.numel_checked_int(); }
            catch (const BE::Error& e) { std::printf("%s\n", e.what()); return 0; }
            return 1;
        }
        """
    )
    exe = tmp_path / "big"
    include = brainevent.include_dir()
    subprocess.run([gxx, "-std=c++17", "-I", include, str(program), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert (
        "numel_checked_int(): the tensor has 2147483648 elements, more than an int holds (2147483647)" in out
    )
