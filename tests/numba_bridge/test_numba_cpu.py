"""numba_kernel: a Numba @njit function called from a compiled XLA FFI handler on the CPU."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent.runtime.registry import registered_targets

numba = pytest.importorskip("numba")


@numba.njit
def add(x, y, out):
    for i in range(out.size):
        out[i] = x[i] + y[i]


@numba.njit
def row_min_max(x, lo, hi):
    for r in range(x.shape[0]):
        lo[r] = x[r].min()
        hi[r] = x[r].max()


@numba.njit
def add_rows(x, y, out):
    # Written for a batch axis first: under vmap "expand_dims" y may have a batch of 1.
    for b in range(out.shape[0]):
        yb = 0 if y.shape[0] == 1 else b
        for i in range(out.shape[1]):
            out[b, i] = x[b, i] + y[yb, i]


@numba.njit
def accumulate(x, acc, out):
    # With input_output_aliases={1: 0}, `out` is `acc`'s buffer.
    for i in range(out.size):
        out[i] = acc[i] + x[i]


def spec(shape: tuple[int, ...], dtype: object = jnp.float32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


def test_add_under_jit_matches_numpy() -> None:
    f = brainevent.numba_kernel(add, outs=spec((1024,)))
    a = jnp.arange(1024, dtype=jnp.float32)
    b = jnp.full(1024, 2.0, dtype=jnp.float32)
    np.testing.assert_array_equal(np.asarray(jax.jit(f)(a, b)), np.asarray(a) + 2.0)
    np.testing.assert_array_equal(np.asarray(f(a, b)), np.asarray(a) + 2.0)  # eager too


def test_multiple_outputs_follow_the_outs_pytree() -> None:
    f = brainevent.numba_kernel(row_min_max, outs=(spec((3,)), spec((3,))))
    x = jnp.asarray(np.random.default_rng(0).normal(size=(3, 5)).astype(np.float32))
    lo, hi = jax.jit(f)(x)
    np.testing.assert_array_equal(np.asarray(lo), np.asarray(x).min(axis=1))
    np.testing.assert_array_equal(np.asarray(hi), np.asarray(x).max(axis=1))
    # Dicts flatten in sorted-key order ("hi" before "lo"): the function gets outputs in that order.
    g = brainevent.numba_kernel(row_min_max, outs={"b_hi": spec((3,)), "a_lo": spec((3,))})
    res = g(x)
    np.testing.assert_array_equal(np.asarray(res["a_lo"]), np.asarray(x).min(axis=1))


def test_dtypes_and_ranks() -> None:
    @numba.njit
    def scale2d(x, out):
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                out[i, j] = x[i, j] * 3

    for dtype in (np.int32, np.float64, np.int64):
        f = brainevent.numba_kernel(scale2d, outs=spec((4, 6), dtype))
        x = np.arange(24, dtype=dtype).reshape(4, 6)
        np.testing.assert_array_equal(np.asarray(jax.jit(f)(jnp.asarray(x))), x * 3)


def test_vmap_sequential_keeps_the_kernel_rank() -> None:
    f = brainevent.numba_kernel(add, outs=spec((8,)), vmap_method="sequential")
    a = jnp.arange(24, dtype=jnp.float32).reshape(3, 8)
    out = jax.jit(jax.vmap(f, in_axes=(0, None)))(a, jnp.ones(8, jnp.float32))
    np.testing.assert_array_equal(np.asarray(out), np.asarray(a) + 1)


@pytest.mark.parametrize("method", ["expand_dims", "broadcast_all"])
def test_vmap_rank_changing_methods_compile_a_batched_kernel(method: str) -> None:
    f = brainevent.numba_kernel(add_rows, outs=spec((8,)), vmap_method=method)
    a = jnp.arange(24, dtype=jnp.float32).reshape(3, 8)
    b = jnp.arange(8, dtype=jnp.float32)
    out = jax.jit(jax.vmap(f, in_axes=(0, None)))(a, b)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(a) + np.asarray(b))


def test_input_output_aliases_update_in_place() -> None:
    f = brainevent.numba_kernel(accumulate, outs=spec((16,)), input_output_aliases={1: 0})
    x = jnp.ones(16, jnp.float32)
    acc = jnp.arange(16, dtype=jnp.float32)
    np.testing.assert_array_equal(np.asarray(jax.jit(f)(x, acc)), np.arange(16) + 1.0)


def test_fori_loop_and_recreated_wrappers_reuse_registrations() -> None:
    before = set(registered_targets())
    for _ in range(3):
        f = brainevent.numba_kernel(add, outs=spec((64,)))

        @jax.jit
        def run(a: jax.Array, f=f) -> jax.Array:
            return jax.lax.fori_loop(0, 1000, lambda i, acc: f(acc, a), jnp.zeros(64, jnp.float32))

        np.testing.assert_array_equal(np.asarray(run(jnp.ones(64, jnp.float32))), np.full(64, 1000.0))
    assert len(set(registered_targets()) - before) <= 1  # one handler for (2 inputs, 1 output)


def test_plain_python_function_is_compiled_with_njit() -> None:
    def double(x, out):
        for i in range(x.size):
            out[i] = 2 * x[i]

    f = brainevent.numba_kernel(double, outs=spec((5,)))
    np.testing.assert_array_equal(np.asarray(f(jnp.arange(5.0, dtype=jnp.float32))), np.arange(5.0) * 2)


def test_errors() -> None:
    with pytest.raises(TypeError, match="numba_kernel needs a function, got int"):
        brainevent.numba_kernel(42, outs=spec((5,)))
    with pytest.raises(ValueError, match="vmap_method"):
        brainevent.numba_kernel(add, outs=spec((5,)), vmap_method="bogus")
    with pytest.raises(TypeError, match="ShapeDtypeStruct"):
        brainevent.numba_kernel(add, outs=[5])
    f = brainevent.numba_kernel(add, outs=spec((4,)))
    # Numba's own typing error surfaces as is: out[i] = <a row of a 2-D input> does not type.
    with pytest.raises(numba.core.errors.TypingError, match=r"No implementation of function .*setitem"):
        f(jnp.ones((2, 2), jnp.float32), jnp.ones((2, 2), jnp.float32))


def test_numba_kernel_without_numba_raises_import_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "numba", None)
    with pytest.raises(ImportError, match="numba"):
        brainevent.numba_kernel(lambda x, o: None, outs=spec((1,)))


# ------------------------------------------------------------------ the handler's own checks


def _add_target_and_id() -> tuple[str, int]:
    from brainevent.calls.operands import signature_of
    from brainevent.numba_bridge.cpu_kernel import preparer

    x = jnp.ones(8, jnp.float32)
    return preparer(add)(signature_of((x, x), [spec((8,))]))


@pytest.mark.host
def test_handler_calls_only_registered_kernels() -> None:
    target, kernel_id = _add_target_and_id()
    x = jnp.arange(8, dtype=jnp.float32)
    call = jax.ffi.ffi_call(target, spec((8,)))
    np.testing.assert_array_equal(np.asarray(call(x, x, kernel_id=np.int64(kernel_id))), np.arange(8) * 2.0)
    unknown = kernel_id ^ 0x5A5A5A5A
    with pytest.raises(jax.errors.JaxRuntimeError, match=rf"Numba kernel id {unknown} is not registered"):
        jax.block_until_ready(jax.jit(lambda v: call(v, v, kernel_id=np.int64(unknown)))(x))


@pytest.mark.host
def test_handler_rejects_operands_the_kernel_was_not_compiled_for() -> None:
    target, kernel_id = _add_target_and_id()
    x = jnp.ones(8, jnp.float32)
    with pytest.raises(jax.errors.JaxRuntimeError, match=r"compiled for 3 arrays, the call passes 2"):
        jax.block_until_ready(jax.ffi.ffi_call(target, spec((8,)))(x, kernel_id=np.int64(kernel_id)))
    grid = jnp.ones((2, 4), jnp.float32)
    with pytest.raises(jax.errors.JaxRuntimeError, match=r"array 0 has rank 2 .* compiled for rank 1"):
        jax.block_until_ready(jax.ffi.ffi_call(target, spec((8,)))(grid, x, kernel_id=np.int64(kernel_id)))
    doubles = jnp.ones(8, jnp.int64) if jax.config.jax_enable_x64 else jnp.ones(8, jnp.int16)
    with pytest.raises(jax.errors.JaxRuntimeError, match=r"array 1 has rank 1 and \d-byte elements"):
        jax.block_until_ready(jax.ffi.ffi_call(target, spec((8,)))(x, doubles, kernel_id=np.int64(kernel_id)))


@pytest.mark.host
def test_handler_needs_its_kernel_id_attribute() -> None:
    target, kernel_id = _add_target_and_id()
    x = jnp.ones(8, jnp.float32)
    call = jax.ffi.ffi_call(target, spec((8,)))
    error = jax.errors.JaxRuntimeError
    with pytest.raises(error, match=r"exactly one attribute, kernel_id, an int64 scalar .*; got 0 attribute"):
        jax.block_until_ready(call(x, x))
    with pytest.raises(error, match=r"got 1 attribute\(s\): 'kernel_id', a scalar of int32"):
        jax.block_until_ready(call(x, x, kernel_id=np.int32(kernel_id & 0x7FFF)))


@numba.njit
def sum16(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, out):
    for i in range(out.size):
        out[i] = a0[i] + a1[i] + a2[i] + a3[i] + a4[i] + a5[i] + a6[i] + a7[i]
        out[i] += a8[i] + a9[i] + a10[i] + a11[i] + a12[i] + a13[i] + a14[i] + a15[i]


def test_many_operands_take_the_handlers_heap_path() -> None:
    # 17 operands: more than the handler keeps on its stack.
    f = brainevent.numba_kernel(sum16, outs=spec((5,)))
    inputs = [jnp.full(5, float(k), jnp.float32) for k in range(16)]
    np.testing.assert_array_equal(np.asarray(jax.jit(f)(*inputs)), np.full(5, float(sum(range(16)))))


@numba.njit
def segment_sum(x, ids, out):
    # Accumulates into `out`: it must start at zero (zeros=).
    for i in range(x.shape[0]):
        out[ids[i]] += x[i]


def _segment_sum(x: np.ndarray, ids: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, x.dtype)
    np.add.at(out, ids, x)
    return out


X = np.arange(10, dtype=np.float32)
IDS = (np.arange(10) % 4).astype(np.int32)


def test_zeroed_results_accumulate_from_zero_under_jit_and_vmap() -> None:
    f = brainevent.numba_kernel(segment_sum, spec((4,)), zeros=True, vmap_method="sequential")
    g = jax.jit(lambda x, ids: f(x, ids) + f(2 * x, ids))
    for _ in range(3):  # the same buffers again: each call starts from zero
        np.testing.assert_array_equal(np.asarray(g(X, IDS)), 3 * _segment_sum(X, IDS, 4))
    # The zeros are an operand aliased to the result: XLA clears it before the kernel runs.
    text = jax.jit(f).lower(X, IDS).as_text()
    assert "output_operand_aliases" in text and "operand_index = 2" in text, text
    xs = np.stack([X, -X, 3 * X])
    for method in ("sequential", "sequential_unrolled"):
        h = brainevent.numba_kernel(segment_sum, spec((4,)), zeros=0, vmap_method=method)
        got = jax.jit(jax.vmap(h, in_axes=(0, None)))(xs, IDS)
        np.testing.assert_array_equal(np.asarray(got), np.stack([_segment_sum(x, IDS, 4) for x in xs]))


@numba.njit
def segment_sum_batched(x, ids, out):
    # Batch axis first; under "expand_dims" an unbatched ids has a batch of 1.
    for b in range(out.shape[0]):
        for i in range(x.shape[1]):
            out[b, ids[0 if ids.shape[0] == 1 else b, i]] += x[b, i]


@pytest.mark.parametrize("method", ["expand_dims", "broadcast_all"])
def test_zeroed_results_of_a_rank_changing_vmap_are_cleared_whole(method: str) -> None:
    f = brainevent.numba_kernel(segment_sum_batched, spec((4,)), zeros=True, vmap_method=method)
    xs = np.stack([X, -X, 3 * X])
    g = jax.jit(jax.vmap(lambda x: f(x, IDS) + f(2 * x, IDS)))
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(g(xs)), np.stack([3 * _segment_sum(x, IDS, 4) for x in xs]))


def test_zeros_names_results_of_the_outs_pytree() -> None:
    @numba.njit
    def count_and_sum(x, ids, counts, sums):
        for i in range(x.shape[0]):
            counts[ids[i]] += 1.0
            sums[ids[i]] += x[i]

    f = brainevent.numba_kernel(count_and_sum, {"n": spec((4,)), "s": spec((4,))}, zeros=[0, 1])
    got = jax.jit(f)(X, IDS)
    np.testing.assert_array_equal(np.asarray(got["n"]), np.bincount(IDS, minlength=4))
    np.testing.assert_array_equal(np.asarray(got["s"]), _segment_sum(X, IDS, 4))


@pytest.mark.parametrize("bad", [2, -1, "out", 1.0, [0, 5], [True], ()])
def test_a_bad_zeros_value_is_refused_when_the_function_is_made(bad: object) -> None:
    from brainevent.errors import KernelCallError

    with pytest.raises(KernelCallError) as info:
        brainevent.numba_kernel(segment_sum, spec((4,)), zeros=bad)
    for word in ("segment_sum", f"zeros={bad!r}", "expected True", "1 result(s)", "Fix: e.g. zeros=0"):
        assert word in str(info.value), (word, str(info.value))


def test_a_result_both_zeroed_and_aliased_is_refused() -> None:
    from brainevent.errors import KernelCallError

    with pytest.raises(KernelCallError, match=r"result 0 is both cleared to zero.*input_output_aliases"):
        brainevent.numba_kernel(accumulate, spec((4,)), input_output_aliases={1: 0}, zeros=True)


@pytest.mark.host
def test_the_handler_skips_only_inputs_that_alias_results() -> None:
    target, kernel_id = _add_target_and_id()
    x = jnp.arange(8, dtype=jnp.float32)
    aliased = jax.ffi.ffi_call(target, spec((8,)), input_output_aliases={2: 0})
    got = aliased(x, x, jnp.zeros(8, jnp.float32), kernel_id=np.int64(kernel_id))
    np.testing.assert_array_equal(np.asarray(got), np.arange(8) * 2.0)
    with pytest.raises(jax.errors.JaxRuntimeError, match=r"compiled for 3 arrays, the call passes 4"):
        extra = jax.ffi.ffi_call(target, spec((8,)))(x, x, x, kernel_id=np.int64(kernel_id))
        jax.block_until_ready(extra)


def test_vmap_of_a_jitted_kernel_without_a_method_names_the_keyword() -> None:
    from brainevent.errors import KernelCallError

    f = brainevent.numba_kernel(segment_sum, spec((4,)), zeros=True)
    for batched in (jax.vmap(jax.jit(f), in_axes=(0, None)), jax.jit(jax.vmap(f, in_axes=(0, None)))):
        with pytest.raises(KernelCallError) as info:
            batched(np.stack([X, X]), IDS)
        for word in ("jax.vmap needs a vmap method", "vmap_method='sequential'", "numba_kernel"):
            assert word in str(info.value), (word, str(info.value))
