"""Every XLACustomKernel backend that runs on a CPU, on one primitive: Numba, compiled C++ (g++),
Pallas through its interpreter, Warp on its CPU device, and plain JAX. Each matches NumPy under
jit, vmap (the primitive's batching rule), jvp, grad and a 1000-step fori_loop; then the
benchmark times them against each other."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import jax
import pytest

import brainevent
from brainevent.custom_kernel import BenchmarkConfig, XLACustomKernel
from tests.support.backend_cases import axpy_primitive, check_backend, inputs

N = 4096
CPP = r"""
#include "brainevent/common.h"
// @BE axpy arg arg ret
void axpy(const BE::Tensor x, const BE::Tensor y, BE::Tensor out) {
  const float* px = x.data_ptr<float>();
  const float* py = y.data_ptr<float>();
  float* po = out.data_ptr<float>();
  for (int64_t i = 0; i < out.numel(); ++i) po[i] = 2.0f * px[i] + py[i];
}
"""
WARP_MISSING = "warp-lang is not installed (pip install warp-lang, or the brainevent[warp] extra)"


def pallas_generator(outs: Any) -> Any:
    from jax.experimental import pallas as pl

    def kernel(x_ref: Any, y_ref: Any, o_ref: Any) -> None:
        o_ref[...] = 2.0 * x_ref[...] + y_ref[...]

    n = outs[0].shape[0]
    block = pl.BlockSpec((1024,), lambda i: (i,))
    return pl.pallas_call(
        kernel, out_shape=outs[0], grid=(n // 1024,), in_specs=[block, block], out_specs=block, interpret=True
    )


def warp_generator() -> Any:
    import warp as wp

    @wp.kernel
    def axpy_warp(
        x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32), out: wp.array(dtype=wp.float32)
    ):  # type: ignore[valid-type]
        i = wp.tid()
        out[i] = 2.0 * x[i] + y[i]

    return lambda outs: wp.jax_kernel(axpy_warp, num_outputs=1)


@pytest.fixture(scope="module")
def cpu_axpy(tmp_path_factory: pytest.TempPathFactory) -> XLACustomKernel:
    numba = pytest.importorskip("numba")

    @numba.njit
    def axpy_numba(x, y, out):  # type: ignore[no-untyped-def]
        for i in range(out.size):
            out[i] = 2.0 * x[i] + y[i]

    op = axpy_primitive("cpu_axpy_backends")
    op.def_numba_kernel(axpy_numba)
    op.def_kernel("cpu", brainevent.load_cpp_inline(name="ck_cpu_axpy", cpp_sources=CPP).axpy)
    op.def_kernel("pallas", "cpu", pallas_generator)
    if importlib.util.find_spec("warp") is not None:
        # Warp compiles CPU kernels into its own cache: keep it out of the user's.
        os.environ.setdefault("WARP_CACHE_PATH", str(tmp_path_factory.mktemp("warp-cache")))
        op.def_warp_kernel(warp_generator(), platform="cpu")
    op.def_kernel("jnp", "cpu", lambda outs: lambda x, y: (2.0 * x + y,))
    return op


def on_cpu(a: Any) -> Any:
    return jax.device_put(a, jax.devices("cpu")[0])


@pytest.mark.parametrize("backend", ["numba", "cpp", "pallas", "warp", "jnp"])
def test_each_cpu_backend_matches_numpy_under_every_transform(
    cpu_axpy: XLACustomKernel, backend: str
) -> None:
    if backend == "warp" and "warp" not in cpu_axpy.available_backends("cpu"):
        pytest.skip(WARP_MISSING)
    check_backend(cpu_axpy, backend, N, on_cpu)


def test_the_cpu_backends_benchmarked_against_each_other(cpu_axpy: XLACustomKernel) -> None:
    x, y = inputs(N)
    result = cpu_axpy.benchmark(
        platform="cpu", configs=[BenchmarkConfig(f"n={N}", (x, y))], n_warmup=2, n_runs=10
    )
    ran = {r.backend for r in result.records if r.success}
    assert {"numba", "cpp", "pallas", "jnp"} <= ran, result.table()
    assert ran == set(cpu_axpy.available_backends("cpu")), result.table()
    print(result.table())
