"""numba_cuda_kernel on a real GPU: the seed's examples verbatim, vmap, loops, devices, graphs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent import numba_cuda_kernel
from brainevent.runtime.registry import registered_targets

pytestmark = [pytest.mark.gpu, pytest.mark.nvcc]
cuda = pytest.importorskip("numba.cuda")


def test_seed_option_1_and_option_2_verbatim() -> None:
    # The seed's imports, in the seed's order.
    from numba import cuda  # noqa: I001
    import jax
    import jax.numpy as jnp

    @cuda.jit
    def add_kernel(x, y, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] + y[i]

    # Option 1: Explicit grid/block
    kernel_fn = numba_cuda_kernel(
        add_kernel,
        outs=jax.ShapeDtypeStruct((1024,), jnp.float32),
        grid=4,
        block=256,
    )
    a = jnp.arange(1024, dtype=jnp.float32)
    b = jnp.full(1024, 2.5, dtype=jnp.float32)
    np.testing.assert_array_equal(np.asarray(jax.jit(kernel_fn)(a, b)), np.asarray(a) + 2.5)

    # Option 2: Auto grid from launch_dims
    kernel_fn = numba_cuda_kernel(
        add_kernel,
        outs=jax.ShapeDtypeStruct((1024,), jnp.float32),
        launch_dims=1024,
    )

    @jax.jit
    def f(a, b):
        return kernel_fn(a, b)

    np.testing.assert_array_equal(np.asarray(f(a, b)), np.asarray(a) + 2.5)
    np.testing.assert_array_equal(np.asarray(kernel_fn(a, b)), np.asarray(a) + 2.5)  # eager


@cuda.jit
def add_kernel(x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] + y[i]


@cuda.jit
def add_rows(x, y, out):
    # Batch axis first (vmap "broadcast_all"/"expand_dims" compile this for rank 2).
    b, i = cuda.grid(2)
    if b < out.shape[0] and i < out.shape[1]:
        out[b, i] = x[b, i] + y[0 if y.shape[0] == 1 else b, i]


@cuda.jit
def split_2d(x, lo, hi):
    i, j = cuda.grid(2)
    if i < x.shape[0] and j < x.shape[1]:
        lo[i, j] = min(x[i, j], 0.0)
        hi[i, j] = max(x[i, j], 0.0)


@cuda.jit
def accumulate(x, acc, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = acc[i] + x[i]


def spec(shape: tuple[int, ...], dtype: object = jnp.float32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


def test_vmap_sequential() -> None:
    f = numba_cuda_kernel(add_kernel, outs=spec((1024,)), launch_dims=1024, vmap_method="sequential")
    a = jnp.arange(4 * 1024, dtype=jnp.float32).reshape(4, 1024)
    out = jax.jit(jax.vmap(f, in_axes=(0, None)))(a, jnp.ones(1024, jnp.float32))
    np.testing.assert_array_equal(np.asarray(out), np.asarray(a) + 1)


@pytest.mark.parametrize("method", ["broadcast_all", "expand_dims"])
def test_vmap_rank_changing(method: str) -> None:
    f = numba_cuda_kernel(add_rows, outs=spec((1024,)), launch_dims=(8, 1024), vmap_method=method)
    a = jnp.arange(4 * 1024, dtype=jnp.float32).reshape(4, 1024)
    b = jnp.arange(1024, dtype=jnp.float32)
    out = jax.jit(jax.vmap(f, in_axes=(0, None)))(a, b)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(a) + np.asarray(b))


def test_fori_loop_1000_steps() -> None:
    f = numba_cuda_kernel(add_kernel, outs=spec((1024,)), launch_dims=1024)

    @jax.jit
    def run(x: jax.Array) -> jax.Array:
        return jax.lax.fori_loop(0, 1000, lambda i, acc: f(acc, x), jnp.zeros(1024, jnp.float32))

    np.testing.assert_array_equal(np.asarray(run(jnp.full(1024, 0.5, jnp.float32))), np.full(1024, 500.0))


def test_multiple_outputs_2d_launch_and_pytree_outs() -> None:
    x = np.random.default_rng(0).normal(size=(100, 70)).astype(np.float32)
    f = numba_cuda_kernel(split_2d, outs=[spec((100, 70)), spec((100, 70))], launch_dims=(100, 70))
    lo, hi = jax.jit(f)(jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(lo), np.minimum(x, 0))
    np.testing.assert_array_equal(np.asarray(hi), np.maximum(x, 0))


def test_input_output_aliases_and_float64_int32() -> None:
    f = numba_cuda_kernel(accumulate, outs=spec((1000,)), launch_dims=1000, input_output_aliases={1: 0})
    out = jax.jit(f)(jnp.ones(1000, jnp.float32), jnp.arange(1000, dtype=jnp.float32))
    np.testing.assert_array_equal(np.asarray(out), np.arange(1000) + 1.0)
    g = numba_cuda_kernel(add_kernel, outs=spec((300,), jnp.int32), grid=(2,), block=(256,))
    ints = jnp.arange(300, dtype=jnp.int32)
    np.testing.assert_array_equal(np.asarray(g(ints, ints)), np.arange(300) * 2)


def test_every_gpu() -> None:
    f = jax.jit(numba_cuda_kernel(add_kernel, outs=spec((1024,)), launch_dims=1024))
    for device in jax.devices("gpu"):
        a = jax.device_put(jnp.arange(1024, dtype=jnp.float32), device)
        b = jax.device_put(jnp.full(1024, float(device.id + 1), jnp.float32), device)
        out = f(a, b)
        assert out.devices() == {device}
        np.testing.assert_array_equal(np.asarray(out), np.arange(1024) + device.id + 1.0)


def test_recreated_wrappers_register_nothing_new() -> None:
    a = jnp.ones(1024, jnp.float32)
    numba_cuda_kernel(add_kernel, outs=spec((1024,)), launch_dims=1024)(a, a)
    before = dict(registered_targets())
    for _ in range(5):
        f = numba_cuda_kernel(add_kernel, outs=spec((1024,)), launch_dims=1024)
        np.testing.assert_array_equal(np.asarray(jax.jit(f)(a, a)), np.full(1024, 2.0))
    assert registered_targets() == before


GRAPH_SCRIPT = textwrap.dedent(
    """
    import brainevent
    assert brainevent.enable_cuda_graphs()
    import jax, jax.numpy as jnp, numpy as np
    from numba import cuda

    @cuda.jit
    def add_kernel(x, y, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] + y[i]

    f = brainevent.numba_cuda_kernel(add_kernel, outs=jax.ShapeDtypeStruct((1024,), jnp.float32),
                                     launch_dims=1024)
    run = jax.jit(lambda x: jax.lax.fori_loop(0, 1000, lambda i, a: f(a, x), jnp.zeros(1024, jnp.float32)))
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(run(jnp.ones(1024, jnp.float32))), np.full(1024, 1000.0))
    print("graphs-ok")
    """
)


def test_under_cuda_graph_flags_in_a_fresh_process() -> None:
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")  # the parent holds most memory
    out = subprocess.run(
        [sys.executable, "-c", GRAPH_SCRIPT], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "graphs-ok" in out.stdout


CUDA_ADD = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"

__global__ void add_kernel(const float* a, const float* b, float* out, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) out[idx] = a[idx] + b[idx];
}

// @BE vector_add arg arg ret stream
void vector_add(const BE::Tensor a, const BE::Tensor b, BE::Tensor out, int64_t stream) {
    int n = a.numel();
    add_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        static_cast<const float*>(a.data_ptr()), static_cast<const float*>(b.data_ptr()),
        static_cast<float*>(out.data_ptr()), n);
}
"""


def test_numba_cuda_kernel_and_load_cuda_inline_agree() -> None:
    """The same add through both paths, per jitted call and in a 1000-step loop.

    Their per-call and per-step costs are compared by benchmarks/bench_cuda.py.
    """
    brainevent.load_cuda_inline(name="numba_bench_add", cuda_sources=CUDA_ADD)
    compiled = jax.ffi.ffi_call("numba_bench_add.vector_add", spec((1024,)))
    bridged = numba_cuda_kernel(add_kernel, outs=spec((1024,)), launch_dims=1024)
    a = jnp.arange(1024, dtype=jnp.float32)
    b = jnp.full(1024, 0.5, jnp.float32)
    for fn in (compiled, bridged):
        np.testing.assert_array_equal(np.asarray(jax.jit(fn)(a, b)), np.arange(1024) + 0.5)
        loop = jax.jit(lambda x, fn=fn: jax.lax.fori_loop(0, 1000, lambda i, acc: fn(acc, x), x))
        np.testing.assert_array_equal(np.asarray(loop(b)), np.full(1024, 500.5))
