"""Declarations where the kernel is written, through real g++ builds called from JAX and compared
with NumPy: input dtypes checked on every call, results cleared to zero before the kernel runs,
result dims taken from input dims, the vmap method and batch dims in the ``// @BE`` line; and
attributes given as concrete JAX or NumPy scalars."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent.errors import KernelCallError

# A segment sum: it accumulates into its result, so the result must start at zero.
SOURCE = r"""
#include "brainevent/common.h"
/* @BE segsum arg:float32 arg:int32 ret:(num_segments,x.shape[1]):float32:zeros
          attr.num_segments:int64 vmap_method=sequential */
void segsum(const BE::Tensor x, const BE::Tensor ids, BE::Tensor out, int64_t num_segments) {
  const float* px = x.data_ptr<float>();
  const int32_t* pi = ids.data_ptr<int32_t>();
  float* po = out.data_ptr<float>();
  const int64_t rows = x.size(0), cols = x.size(1);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) po[pi[r] * cols + c] += px[r * cols + c];
}
// @BE hist arg ret:zeros attr.scale:float32
void hist(const BE::Tensor x, BE::Tensor out, float scale) {
  const int32_t* px = x.data_ptr<int32_t>();
  float* po = out.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) po[px[i]] += scale;
}
// @BE scale arg:float32 ret:like(x) attr.s:float32
void scale(const BE::Tensor x, BE::Tensor out, float s) {
  const float* px = x.data_ptr<float>(); float* po = out.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) po[i] = px[i] * s;
}
// @BE rowsum arg:float32 ret:(x.shape[0],x.shape[1]):float32:zeros num_batch_dims=1 vmap_method=sequential
void rowsum(const BE::Tensor x, BE::Tensor out) {
  const float* px = x.data_ptr<float>(); float* po = out.data_ptr<float>();
  const int64_t b = x.size(0), r = x.size(1), c = x.size(2);
  for (int64_t k = 0; k < b; ++k)
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) po[k * r + i] += px[(k * r + i) * c + j];
}
"""

X = np.arange(12, dtype=np.float32).reshape(6, 2)
IDS = np.array([0, 1, 0, 2, 1, 0], np.int32)


def _segsum(x, ids, n):
    out = np.zeros((n, x.shape[1]), np.float32)
    np.add.at(out, ids, x)
    return out


@pytest.fixture(scope="module")
def mod():
    return brainevent.load_cpp_inline(name="declarations", cpp_sources=SOURCE)


def test_specs_show_the_declarations(mod):
    assert mod.specs["segsum"] == [
        "arg:float32",
        "arg:int32",
        "ret:(num_segments,x.shape[1]):float32:zeros",
        "attr.num_segments:int64",
        "vmap_method=sequential",
    ]
    assert mod.segsum.vmap_method == "sequential" and mod.rowsum.num_batch_dims == 1


def test_a_zeroed_result_accumulates_from_zero_under_jit(mod):
    f = jax.jit(lambda x, ids: mod.segsum(x, ids, num_segments=3))
    for _ in range(3):  # the same buffers again: each call starts from zero
        np.testing.assert_array_equal(np.asarray(f(X, IDS)), _segsum(X, IDS, 3))
    # The zeros are an operand aliased to the result: XLA clears it before the kernel runs.
    assert "output_operand_aliases" in f.lower(X, IDS).as_text()
    # Inside one program, beside other work, and a result whose shape the caller gives.
    g = jax.jit(
        lambda x, ids: (
            mod.segsum(x * 2, ids, num_segments=4)
            + mod.hist(ids, outs=jax.ShapeDtypeStruct((4, 1), jnp.float32), scale=1.0)
        )
    )
    counts = np.bincount(IDS, minlength=4).astype(np.float32)[:, None]
    np.testing.assert_array_equal(np.asarray(g(X, IDS)), _segsum(2 * X, IDS, 4) + counts)


def test_result_dims_come_from_input_dims(mod):
    x = np.ones((5, 7), np.float32)
    out = jax.jit(lambda x: mod.segsum(x, np.zeros(5, np.int32), num_segments=2))(x)
    assert out.shape == (2, 7)
    np.testing.assert_array_equal(np.asarray(out), _segsum(x, np.zeros(5, np.int32), 2))
    with pytest.raises(KernelCallError) as info:
        mod.segsum(np.ones(5, np.float32), np.zeros(5, np.int32), num_segments=2)
    for word in ("'out'", "x.shape[1]", "shape (5,)", "no dim 1"):
        assert word in str(info.value), (word, str(info.value))


def test_the_binding_checks_input_dims_for_raw_ffi_calls(mod):
    wrong = jax.ShapeDtypeStruct((3, 5), jnp.float32)
    call = jax.ffi.ffi_call("declarations.segsum", wrong, input_output_aliases={2: 0})
    with pytest.raises(jax.errors.JaxRuntimeError) as info:
        np.asarray(call(X, IDS, jnp.zeros((3, 5), jnp.float32), num_segments=np.int64(3)))
    for word in ("INVALID_ARGUMENT", "x.shape[1]", "must have shape (3, 2)", "got shape (3, 5)"):
        assert word in str(info.value), (word, str(info.value))
    # An extra input that is not aliased to a result is refused (the binding counts operands).
    call = jax.ffi.ffi_call("declarations.segsum", jax.ShapeDtypeStruct((3, 2), jnp.float32))
    with pytest.raises(jax.errors.JaxRuntimeError, match="expected 2 input array"):
        np.asarray(call(X, IDS, jnp.zeros((3, 2), jnp.float32), num_segments=np.int64(3)))


def test_an_input_of_another_dtype_is_refused_before_the_kernel_runs(mod):
    for call in (lambda: mod.segsum(X.astype(np.int32), IDS, num_segments=3),
                 lambda: jax.jit(lambda x: mod.scale(x, s=2.0))(jnp.arange(4, dtype=jnp.int16))):  # fmt: skip
        with pytest.raises(KernelCallError) as info:
            call()
        text = str(info.value)
        for word in (
            "'x'",
            "arg:float32",
            "got dtype int",
            "the kernel was not run",
            "x.astype(jnp.float32)",
        ):
            assert word in text, (word, text)
    with pytest.raises(KernelCallError, match=r"input 1 'ids' is declared arg:int32 but got dtype float32"):
        mod.segsum(X, IDS.astype(np.float32), num_segments=3)


def test_vmap_follows_the_declared_method(mod):
    xs = np.stack([X, 2 * X, -X])
    got = jax.jit(jax.vmap(lambda x: mod.segsum(x, IDS, num_segments=3)))(xs)
    np.testing.assert_array_equal(np.asarray(got), np.stack([_segsum(x, IDS, 3) for x in xs]))
    # Declared batch dims with a zeroed result, vmapped once more.
    cube = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(np.asarray(jax.jit(mod.rowsum)(cube)), cube.sum(-1))
    many = np.stack([cube, cube + 1])
    np.testing.assert_array_equal(np.asarray(jax.vmap(mod.rowsum)(many)), many.sum(-1))


def test_vmap_without_a_method_names_both_ways_to_declare_one(mod):
    x = jnp.ones((3, 4), jnp.float32)
    with pytest.raises(KernelCallError) as info:
        jax.vmap(lambda v: mod.scale(v, s=2.0))(x)
    words = (
        "jax.vmap needs a vmap method",
        "vmap_method=sequential",
        "// @BE scale",
        "mod.scale.vmap_method = ",
    )
    for word in ("declarations.scale", *words):
        assert word in str(info.value), (word, str(info.value))

    # Traced under jit, then batched (the call reaches vmap as JAX's primitive): the same error.
    def f(v):
        return mod.scale(v, s=2.0)

    for batched in (jax.vmap(jax.jit(f)), jax.jit(jax.vmap(f))):
        with pytest.raises(KernelCallError) as info:
            batched(x)
        for word in ("declarations.scale", *words):
            assert word in str(info.value), (word, str(info.value))
        assert "NotImplementedError" not in str(info.value)
    mod.scale.vmap_method = "expand_dims"  # the attribute keeps working
    try:
        np.testing.assert_array_equal(
            np.asarray(jax.vmap(lambda v: mod.scale(v, s=2.0))(x)), 2 * np.ones((3, 4))
        )
    finally:
        mod.scale.vmap_method = None


def test_a_zeroed_result_refuses_expand_dims(mod):
    mod.segsum.vmap_method = "expand_dims"
    try:
        with pytest.raises(KernelCallError, match=r"':zeros'.*expand_dims.*broadcast_all"):
            mod.segsum(X, IDS, num_segments=3)
    finally:
        mod.segsum.vmap_method = "sequential"


@pytest.mark.parametrize("s", [jnp.float32(2.0), np.float32(2), jnp.asarray(2.0), np.array(2.0), 2])
def test_concrete_scalars_are_attributes(mod, s):
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda v: mod.scale(v, s=s))(x)), 2 * x)
    counts = mod.hist(np.array([0, 0, 1], np.int32), outs=jax.ShapeDtypeStruct((2,), jnp.float32), scale=s)
    np.testing.assert_array_equal(np.asarray(counts), [4.0, 2.0])


def test_a_traced_attribute_is_told_to_be_an_input_array(mod):
    x = jnp.arange(4, dtype=jnp.float32)
    with pytest.raises(KernelCallError) as info:
        jax.jit(lambda v: mod.scale(v, s=v.sum()))(x)
    for word in ("attribute 's'", "traced value", "pass it as an input array", "np.float32(2.0)"):
        assert word in str(info.value), (word, str(info.value))


CUDA_SOURCE = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"

// A histogram per column: counts[b, c] is how many x[:, c] equal b.
__global__ void hist_kernel(const int* x, int* counts, int n, int cols, int bins) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] >= 0 && x[i] < bins) atomicAdd(&counts[x[i] * cols + i % cols], 1);
}

// @BE histogram arg:int32 ret:(bins,x.shape[1]):int32:zeros attr.bins:int32 stream vmap_method=sequential
void histogram(const BE::Tensor x, BE::Tensor counts, int bins, int64_t stream) {
    int n = x.numel();
    if (n == 0) return;
    hist_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        x.data_ptr<int32_t>(), counts.data_ptr<int32_t>(), n, (int)x.size(1), bins);
    BE_CHECK_KERNEL_LAUNCH();
}
"""


@pytest.mark.nvcc
def test_a_cuda_module_with_declarations_builds():
    mod = brainevent.load_cuda_inline(
        "declarations_cuda", CUDA_SOURCE, compute_capability="sm_80", auto_register=False
    )
    assert mod.specs["histogram"] == [
        "arg:int32",
        "ret:(bins,x.shape[1]):int32:zeros",
        "attr.bins:int32",
        "stream",
        "vmap_method=sequential",
    ]


def test_vmap_of_a_numba_kernel_without_a_method_names_the_keyword():
    pytest.importorskip("numba")

    def add_one(x, out):
        for i in range(x.size):
            out[i] = x[i] + 1

    spec = jax.ShapeDtypeStruct((4,), jnp.float32)
    with pytest.raises(KernelCallError) as info:
        jax.vmap(brainevent.numba_kernel(add_one, spec))(jnp.ones((2, 4), jnp.float32))
    for word in ("add_one", "jax.vmap needs a vmap method", "vmap_method='sequential'"):
        assert word in str(info.value), (word, str(info.value))
    batched = jax.vmap(brainevent.numba_kernel(add_one, spec, vmap_method="sequential"))(jnp.ones((2, 4)))
    np.testing.assert_array_equal(np.asarray(batched), np.full((2, 4), 2.0))


@pytest.mark.gpu
@pytest.mark.nvcc
def test_a_zeroed_cuda_histogram_under_jit_matches_numpy():
    mod = brainevent.load_cuda_inline("declarations_cuda_run", CUDA_SOURCE)
    x = np.random.default_rng(0).integers(0, 5, size=(1000, 3)).astype(np.int32)
    expected = np.stack([np.bincount(x[:, c], minlength=5) for c in range(3)], axis=1)
    f = jax.jit(lambda v: mod.histogram(v, bins=5) + mod.histogram(v, bins=5))
    for _ in range(3):  # the same buffers again: each call starts from zero
        np.testing.assert_array_equal(np.asarray(f(jnp.asarray(x))), 2 * expected)
    batched = jax.vmap(lambda v: mod.histogram(v, bins=5))(jnp.stack([x, x]))
    np.testing.assert_array_equal(np.asarray(batched), np.stack([expected, expected]))
