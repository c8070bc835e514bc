"""Every XLACustomKernel backend on the GPU, on one primitive: Numba-CUDA, compiled CUDA (cuda_raw),
CUDA compiled with NVRTC (nvrtc), Pallas (lowered by JAX through Triton), Triton
(brainevent.triton_kernel), Warp (warp.jax_kernel) and plain JAX as a reference. Each matches
NumPy under jit, vmap (the primitive's batching rule), jvp, grad and a 1000-step fori_loop; the
benchmark times them against each other and prints the table; a remembered winner is what the
next lowering on this GPU uses."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent.custom_kernel import BenchmarkConfig, XLACustomKernel, remembered
from tests.support.backend_cases import axpy_primitive, check_backend, inputs

pytestmark = [pytest.mark.gpu, pytest.mark.nvcc]

N = 4096
BLOCK = 1024
CUDA = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"
__global__ void axpy_kernel(const float* x, const float* y, float* out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * x[i] + y[i];
}
// @BE axpy arg arg ret stream
void axpy(const BE::Tensor x, const BE::Tensor y, BE::Tensor out, int64_t stream) {
    int64_t n = out.numel();
    axpy_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), n);
    BE_CHECK_KERNEL_LAUNCH();
}
"""
# The NVRTC backend's kernel: device code only, its scalars bound by def_cuda_kernel.
NVRTC_AXPY = r"""
extern "C" __global__ void axpy(const float* x, const float* y, float* out, float alpha, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = alpha * x[i] + y[i];
}
"""
MISSING = {
    "nvrtc": "libnvrtc is not installed (pip install nvidia-cuda-nvrtc)",
    "numba_cuda": "numba-cuda is not installed (pip install numba-cuda)",
    "triton": "triton is not installed (pip install triton, or the brainevent[triton] extra)",
    "warp": "warp-lang is not installed (pip install warp-lang, or the brainevent[warp] extra)",
}


def have_nvrtc() -> bool:
    from brainevent.errors import ToolchainError
    from brainevent.nvrtc.process import nvrtc_info

    try:
        nvrtc_info()
    except ToolchainError:
        return False
    return True


def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def pallas_generator(outs: Any) -> Any:
    from jax.experimental import pallas as pl

    def kernel(x_ref: Any, y_ref: Any, o_ref: Any) -> None:
        o_ref[...] = 2.0 * x_ref[...] + y_ref[...]

    block = pl.BlockSpec((BLOCK,), lambda i: (i,))
    grid = (outs[0].shape[0] // BLOCK,)
    return pl.pallas_call(kernel, out_shape=outs[0], grid=grid, in_specs=[block, block], out_specs=block)


def triton_generator() -> Any:
    import triton
    import triton.language as tl

    @triton.jit
    def axpy_triton(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, alpha * x + y, mask=mask)

    def generator(outs: Any) -> Any:
        n = outs[0].shape[0]
        return brainevent.triton_kernel(
            axpy_triton, outs, grid=(triton.cdiv(n, BLOCK),), n=n, alpha=2.0, BLOCK=BLOCK
        )

    return generator


def warp_generator() -> Any:
    import warp as wp

    @wp.kernel
    def axpy_warp(
        x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32), out: wp.array(dtype=wp.float32)
    ):  # type: ignore[valid-type]
        i = wp.tid()
        out[i] = 2.0 * x[i] + y[i]

    return lambda outs: wp.jax_kernel(axpy_warp, num_outputs=1)


def numba_cuda_kernel() -> Any:
    from numba import cuda

    @cuda.jit
    def axpy_numba(x, y, out):  # type: ignore[no-untyped-def]
        i = cuda.grid(1)
        if i < out.size:
            out[i] = 2.0 * x[i] + y[i]

    return axpy_numba


@pytest.fixture(scope="module")
def gpu_axpy(tmp_path_factory: pytest.TempPathFactory) -> XLACustomKernel:
    op = axpy_primitive("gpu_axpy_backends")
    if installed("numba.cuda"):
        op.def_numba_cuda_kernel(numba_cuda_kernel(), launch_dims=lambda ins, outs: outs[0].size)
    op.def_kernel("gpu", brainevent.load_cuda_inline(name="ck_gpu_backends_axpy", cuda_sources=CUDA).axpy)
    if have_nvrtc():
        size = lambda ins, outs: outs[0].size  # noqa: E731
        op.def_cuda_kernel(NVRTC_AXPY, "axpy", launch_dims=size, alpha=2.0, n=size)
    op.def_pallas_kernel("gpu", pallas_generator)
    if installed("triton"):
        op.def_triton_kernel(triton_generator())
    if installed("warp"):
        os.environ.setdefault("WARP_CACHE_PATH", str(tmp_path_factory.mktemp("warp-cache")))
        op.def_warp_kernel(warp_generator())
    op.def_kernel("jnp", "gpu", lambda outs: lambda x, y: (2.0 * x + y,))
    return op


def on_gpu(a: Any) -> Any:
    return jax.device_put(a, jax.devices("gpu")[0])


@pytest.mark.parametrize("backend", ["numba_cuda", "cuda_raw", "nvrtc", "pallas", "triton", "warp", "jnp"])
def test_each_gpu_backend_matches_numpy_under_every_transform(
    gpu_axpy: XLACustomKernel, backend: str
) -> None:
    if backend not in gpu_axpy.available_backends("gpu"):
        pytest.skip(MISSING[backend])
    check_backend(gpu_axpy, backend, N, on_gpu)


def test_one_primitive_benchmarked_across_the_gpu_backends(gpu_axpy: XLACustomKernel) -> None:
    configs = []
    for n in (N, 1 << 20):
        x, y = inputs(n)
        configs.append(BenchmarkConfig(f"n={n}", (x, y), data_kwargs={"n": n}))
    result = gpu_axpy.benchmark(platform="gpu", configs=configs, n_warmup=5, n_runs=30)
    print()
    print(result.table())
    ran = {r.backend for r in result.records if r.success}
    assert ran == set(gpu_axpy.available_backends("gpu")), result.table()
    assert len(ran - {"jnp"}) >= 4, f"fewer than four kernel backends ran:\n{result.table()}"


def test_a_triton_kernel_with_two_results_half_inputs_and_scalar_types() -> None:
    if not installed("triton"):
        pytest.skip(MISSING["triton"])
    import triton
    import triton.language as tl

    @triton.jit
    def shift_scale(x_ptr, sum_ptr, prod_ptr, n, shift, scale, negate, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
        shifted = x + shift
        tl.store(sum_ptr + offsets, tl.where(negate, -shifted, shifted), mask=mask)
        tl.store(prod_ptr + offsets, x * scale, mask=mask)

    n = 1000  # not a multiple of the block: the mask matters
    outs = (jax.ShapeDtypeStruct((n,), jnp.float32), jax.ShapeDtypeStruct((n,), jnp.float32))
    f = brainevent.triton_kernel(
        shift_scale,
        outs,
        grid=lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),),
        n=n,
        shift=3,
        scale=0.5,
        negate=True,
        BLOCK=256,
        vmap_method="sequential",
    )
    x = np.linspace(-2, 2, n).astype(np.float16)
    total, product = jax.jit(f)(on_gpu(x))
    np.testing.assert_allclose(np.asarray(total), -(x.astype(np.float32) + 3), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(product), x.astype(np.float32) * 0.5, rtol=1e-6)
    _, batched = jax.jit(jax.vmap(f))(on_gpu(np.stack([x, -x])))
    np.testing.assert_allclose(np.asarray(batched[1]), -x.astype(np.float32) * 0.5, rtol=1e-6)


def test_a_triton_matmul_with_more_than_48_kib_of_shared_memory_and_a_2d_grid() -> None:
    if not installed("triton"):
        pytest.skip(MISSING["triton"])
    import triton
    import triton.language as tl

    @triton.jit
    def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):  # type: ignore[no-untyped-def]
        rows = tl.program_id(0) * BM + tl.arange(0, BM)
        cols = tl.program_id(1) * BN + tl.arange(0, BN)
        inner = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rows[:, None] * K + (k + inner)[None, :])
            b = tl.load(b_ptr + (k + inner)[:, None] * N + cols[None, :])
            acc += tl.dot(a, b)
        tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc)

    m, n, k = 512, 384, 256
    # 3 stages of a 128x64 and a 64x128 half tile: 96 KiB of shared memory, which a kernel
    # may use only after opting in (the launcher does, up to what the device allows).
    f = brainevent.triton_kernel(
        matmul,
        jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // 128, n // 128),
        M=m,
        N=n,
        K=k,
        BM=128,
        BN=128,
        BK=64,
        num_warps=8,
        num_stages=3,
    )
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    expected = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(np.asarray(jax.jit(f)(on_gpu(a), on_gpu(b))), expected, rtol=1e-2, atol=1e-2)


def test_a_remembered_gpu_winner_is_what_the_next_lowering_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAINEVENT_CACHE_DIR", str(tmp_path / "cache"))
    calls = {"slow": 0, "fast": 0}

    def slow(outs: Any) -> Any:
        calls["slow"] += 1
        steps = 2000
        return lambda v: (
            jax.lax.fori_loop(0, steps, lambda i, acc: acc + v * (2.0 / steps), jnp.zeros_like(v)),
        )

    def fast(outs: Any) -> Any:
        calls["fast"] += 1
        return lambda v: (v * 2.0,)

    op = XLACustomKernel("gpu_remembered_double", outs=lambda v: jax.ShapeDtypeStruct(v.shape, v.dtype))
    op.def_kernel("slow", "gpu", slow)
    op.def_kernel("fast", "gpu", fast)
    x = np.arange(N, dtype=np.float32)
    result = op.benchmark(platform="gpu", configs=[BenchmarkConfig("n", (x,))], n_runs=10, remember=True)
    assert result.fastest("n").backend == "fast", result.table()
    calls.update(slow=0, fast=0)
    np.testing.assert_allclose(np.asarray(jax.jit(op)(on_gpu(x))), 2 * x, rtol=1e-4)
    assert calls == {"slow": 0, "fast": 1}
    text = "\n".join(remembered.describe(tmp_path / "cache"))
    assert f"[gpu, {jax.devices('gpu')[0].device_kind}] float32[{N}] -> float32[{N}]: fast" in text
