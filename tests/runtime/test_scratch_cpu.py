"""Scratch memory on the CPU, through g++ and JAX: a kernel that needs temporaries gets them
from XLA's allocator, through the call sugar and through a raw jax.ffi.ffi_call."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent.errors import KernelCallError

# The median of each row needs a sorted copy of the row: the scratch holds it.
SOURCE = r"""
#include <algorithm>
#include <cstring>
#include "brainevent/common.h"

void row_median(const BE::Tensor x, BE::Tensor out, BE::Scratch work) {
  const int64_t rows = x.size(0), cols = x.size(1);
  float* row = work.as<float>(cols);
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(row, x.data<float>() + r * cols, cols * sizeof(float));
    std::nth_element(row, row + cols / 2, row + cols);
    out.data<float>()[r] = row[cols / 2];
  }
}

// The scratch's size, as the kernel saw it.
void scratch_size(const BE::Tensor x, BE::Tensor out, BE::Scratch work) {
  out.data<int32_t>()[0] = static_cast<int32_t>(work.size_bytes());
}
"""


@pytest.fixture(scope="module")
def mod():  # type: ignore[no-untyped-def]
    return brainevent.load_cpp_inline(
        "scratch_cpu",
        SOURCE,
        functions={"row_median": ["arg", "ret", "scratch"], "scratch_size": ["arg", "ret", "scratch:48"]},
    )


def _x() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((6, 33)).astype(np.float32)


def _median(x: np.ndarray) -> np.ndarray:
    return np.sort(x, axis=1)[:, x.shape[1] // 2]


def _outs(x: np.ndarray) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct((x.shape[0],), jnp.float32)


def test_scratch_sized_by_a_callable_matches_numpy(mod) -> None:  # type: ignore[no-untyped-def]
    x = _x()
    got = mod.row_median(x, outs=_outs(x), scratch_bytes=lambda a: a.shape[1] * 4)
    np.testing.assert_array_equal(np.asarray(got), _median(x))


def test_scratch_under_jit_and_in_a_loop(mod) -> None:  # type: ignore[no-untyped-def]
    x = _x()

    @jax.jit
    def twice(v):  # type: ignore[no-untyped-def]
        def body(i, acc):  # type: ignore[no-untyped-def]
            return acc + mod.row_median(v + i, outs=_outs(x), scratch_bytes=x.shape[1] * 4)

        return jax.lax.fori_loop(0, 2, body, jnp.zeros(x.shape[0], jnp.float32))

    np.testing.assert_allclose(np.asarray(twice(x)), _median(x) * 2 + 1, rtol=1e-6)


def test_the_kernel_sees_the_requested_size(mod) -> None:  # type: ignore[no-untyped-def]
    x = _x()
    outs = jax.ShapeDtypeStruct((1,), jnp.int32)
    assert int(mod.scratch_size(x, outs=outs)[0]) == 48  # the spec's scratch:48
    assert int(mod.scratch_size(x, outs=outs, scratch_bytes=1000)[0]) == 1000


def test_a_too_small_scratch_is_an_error_naming_the_sizes(mod) -> None:  # type: ignore[no-untyped-def]
    x = _x()
    with pytest.raises(jax.errors.JaxRuntimeError, match=r"as<T>\(33, 0\) needs 132 bytes .* holds 100"):
        mod.row_median(x, outs=_outs(x), scratch_bytes=100)


def test_a_missing_size_is_refused_before_the_call(mod) -> None:  # type: ignore[no-untyped-def]
    x = _x()
    with pytest.raises(
        KernelCallError,
        match=r"row_median: its 'scratch' parameter has no size; pass scratch_bytes=",
    ):
        mod.row_median(x, outs=_outs(x))


@pytest.mark.parametrize("bad", [-1, 1.5, True, "64"])
def test_a_bad_size_is_refused(mod, bad) -> None:  # type: ignore[no-untyped-def]
    x = _x()
    with pytest.raises(KernelCallError, match=r"expected a non-negative int number of bytes") as info:
        mod.row_median(x, outs=_outs(x), scratch_bytes=bad)
    assert info.value.data["value"] == bad


def test_a_callable_returning_a_bad_size_is_named(mod) -> None:  # type: ignore[no-untyped-def]
    x = _x()
    with pytest.raises(KernelCallError, match=r"scratch_bytes\(\*arrays\) returned None"):
        mod.row_median(x, outs=_outs(x), scratch_bytes=lambda a: None)


def test_scratch_bytes_on_a_function_without_scratch_is_refused() -> None:
    mod = brainevent.load_cpp_inline(
        "scratch_cpu_none",
        '#include "brainevent/common.h"\nvoid copy(const BE::Tensor x, BE::Tensor out) {}\n',
        functions=["copy"],
    )
    with pytest.raises(KernelCallError, match=r"scratch_bytes=64 was given but the function has no"):
        mod.copy(np.zeros(3, np.float32), scratch_bytes=64)


def test_raw_ffi_call_passes_the_scratch_as_a_trailing_uint8_result(mod) -> None:  # type: ignore[no-untyped-def]
    x = _x()
    scratch = jax.ShapeDtypeStruct((x.shape[1] * 4,), jnp.uint8)
    median, _unused = jax.ffi.ffi_call(mod.targets["row_median"], [_outs(x), scratch])(x)
    np.testing.assert_array_equal(np.asarray(median), _median(x))


def test_raw_ffi_call_without_the_scratch_result_names_it(mod) -> None:  # type: ignore[no-untyped-def]
    x = _x()
    with pytest.raises(
        jax.errors.JaxRuntimeError, match=r"uint8 ShapeDtypeStruct\(\(nbytes,\)\) per 'scratch'"
    ):
        jax.ffi.ffi_call(mod.targets["row_median"], _outs(x))(x)
