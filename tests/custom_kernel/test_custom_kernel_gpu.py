"""XLACustomKernel on a GPU: Numba-CUDA and compiled CUDA kernels, rules, loops, graphs."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.interpreters import ad

import brainevent
from brainevent import KernelCallError, XLACustomKernel
from tests.support.kernels import CUDA_SCALE as SCALE
from tests.support.xla_dumps import custom_call_placement, run_dumping

pytestmark = [pytest.mark.gpu, pytest.mark.nvcc]
cuda = pytest.importorskip("numba.cuda")


@cuda.jit
def axpy(x, y, out):  # type: ignore[no-untyped-def]
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 2 * x[i] + y[i]


def spec(n: int) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct((n,), jnp.float32)


def gpu_axpy() -> XLACustomKernel:
    op = XLACustomKernel("gpu_axpy", outs=lambda x, y: spec(x.size))
    op.def_numba_cuda_kernel(axpy, launch_dims=lambda ins, outs: outs[0].size)

    @op.def_jvp_rule
    def jvp(primals, tangents, *, outs):  # type: ignore[no-untyped-def]
        return op(*primals), op(*tangents)

    @op.def_transpose_rule
    def transpose(cts, x, y, *, outs):  # type: ignore[no-untyped-def]
        (ct,) = cts
        return [2 * ct if ad.is_undefined_primal(x) else None, ct if ad.is_undefined_primal(y) else None]

    return op


X = jnp.arange(4096, dtype=jnp.float32)
Y = jnp.linspace(-1.0, 1.0, 4096, dtype=jnp.float32)


def test_numba_cuda_kernel_jit_vmap_grad() -> None:
    op = gpu_axpy()
    expected = 2 * np.asarray(X) + np.asarray(Y)
    np.testing.assert_allclose(np.asarray(jax.jit(op)(X, Y)), expected)
    np.testing.assert_allclose(np.asarray(op(X, Y)), expected)
    xs = jnp.stack([X, -X])
    np.testing.assert_allclose(
        np.asarray(jax.vmap(lambda x: op(x, Y))(xs)), 2 * np.asarray(xs) + np.asarray(Y)
    )
    gx = jax.jit(jax.grad(lambda x: op(x, Y).sum()))(X)
    np.testing.assert_allclose(np.asarray(gx), np.full(4096, 2.0))


def test_compiled_cuda_function_and_a_cpu_twin() -> None:
    mod = brainevent.load_cuda_inline(name="ck_gpu_scale", cuda_sources=SCALE)
    op = XLACustomKernel("scale", outs=lambda x, **_: spec(x.size)).def_kernel("gpu", mod.scale)
    np.testing.assert_allclose(np.asarray(jax.jit(lambda x: op(x, factor=0.5))(X)), np.asarray(X) * 0.5)
    cpu_x = jax.device_put(np.asarray(X), jax.devices("cpu")[0])
    with pytest.raises(KernelCallError, match="no kernel for platform 'cpu'"):
        jax.jit(lambda x: op(x, factor=0.5))(cpu_x)


# A 1000-step loop of an XLACustomKernel in a fresh process (XLA reads its flags once), with
# or without CUDA graphs; the step is 2 * (v / 2) + 1, so the loop counts to 1000.
LOOP_SCRIPT = r"""
import sys
import brainevent
if sys.argv[1] == "graphs":
    assert brainevent.enable_cuda_graphs()
import jax, jax.numpy as jnp, numpy as np
from numba import cuda

@cuda.jit
def axpy(x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 2 * x[i] + y[i]

op = brainevent.XLACustomKernel("acc", outs=lambda x, y: jax.ShapeDtypeStruct((x.size,), jnp.float32))
op.def_numba_cuda_kernel(axpy, grid=16, block=256)

def loop_1000(x):
    return jax.lax.fori_loop(0, 1000, lambda _, v: op(v * 0.5, jnp.ones_like(v)), x)

out = jax.jit(loop_1000)(jnp.zeros(4096, jnp.float32))
np.testing.assert_allclose(np.asarray(out), np.full(4096, 1000.0))
print("ran")
"""


@pytest.mark.parametrize("graphs", [True, False], ids=["with graphs", "without graphs"])
def test_fori_loop_1000_steps_with_and_without_graphs(tmp_path: Path, graphs: bool) -> None:
    flags = "" if graphs else "--xla_gpu_enable_command_buffer="
    out = run_dumping(LOOP_SCRIPT, ["graphs" if graphs else "plain"], tmp_path, "loop_1000", flags)
    assert "ran" in out
    placement = custom_call_placement(tmp_path, "jit_loop_1000")
    # The loop's body holds the one custom call: captured with graphs, launched alone without.
    expected = (1, 0) if graphs else (0, 1)
    assert (placement.inside, placement.outside) == expected, placement


# -- named backends on the GPU ------------------------------------------------------------------


def gpu_backends(name: str, mod) -> XLACustomKernel:  # type: ignore[no-untyped-def]
    """One primitive, ``2x + y`` on the GPU four ways, and a CPU twin."""
    op = XLACustomKernel(name, outs=lambda x, y: spec(x.size))
    op.def_numba_cuda_kernel(axpy, launch_dims=lambda ins, outs: outs[0].size)  # "numba_cuda"
    op.def_kernel("gpu", mod.axpy2)  # "cuda_raw"
    # brainevent 0.2.1's generator form, under names of their own:
    op.def_kernel(
        "numba_cuda_gen",
        "gpu",
        lambda outs: brainevent.numba_cuda_kernel(axpy, outs=outs[0], launch_dims=outs[0].size),
    )
    op.def_kernel("jnp", "gpu", lambda outs: lambda x, y: (2 * x + y,))
    op.def_kernel("cpu_jnp", "cpu", lambda outs: lambda x, y: (2 * x + y,))
    return op


AXPY2 = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"
__global__ void axpy2_kernel(const float* x, const float* y, float* out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * x[i] + y[i];
}
// @BE axpy2 arg arg ret stream
void axpy2(const BE::Tensor x, const BE::Tensor y, BE::Tensor out, int64_t stream) {
    int64_t n = x.numel();
    axpy2_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), n);
    BE_CHECK_KERNEL_LAUNCH();
}
"""


def test_every_named_gpu_backend_matches_numpy_and_the_cpu_twin_runs_on_cpu_data() -> None:
    mod = brainevent.load_cuda_inline(name="ck_gpu_axpy2", cuda_sources=AXPY2)
    op = gpu_backends("gpu_named_axpy", mod)
    assert op.available_backends("gpu") == ["numba_cuda", "cuda_raw", "numba_cuda_gen", "jnp"]
    expected = 2 * np.asarray(X) + np.asarray(Y)
    for backend in op.available_backends("gpu"):
        f = jax.jit(lambda x, y, b=backend: op(x, y, backend=b))
        np.testing.assert_allclose(np.asarray(f(X, Y)), expected, err_msg=backend)
        xs = jnp.stack([X, -X])
        np.testing.assert_allclose(
            np.asarray(jax.vmap(lambda x, b=backend: op(x, Y, backend=b))(xs)),
            2 * np.asarray(xs) + np.asarray(Y),
            err_msg=backend,
        )
    cpu = jax.devices("cpu")[0]
    on_cpu = jax.jit(op)(jax.device_put(np.asarray(X), cpu), jax.device_put(np.asarray(Y), cpu))
    np.testing.assert_allclose(np.asarray(on_cpu), expected)
    assert on_cpu.devices() == {cpu}


def test_gpu_fallback_and_benchmark_pick_a_working_backend() -> None:
    mod = brainevent.load_cuda_inline(name="ck_gpu_axpy2", cuda_sources=AXPY2)
    op = gpu_backends("gpu_fallback_axpy", mod)

    def broken(**attrs):  # type: ignore[no-untyped-def]
        raise RuntimeError("broken on purpose")

    op.def_kernel("broken", "gpu", broken, asdefault=True)
    with pytest.warns(
        UserWarning, match=r"'broken': RuntimeError: broken on purpose.*used backend 'numba_cuda'"
    ):
        np.testing.assert_allclose(np.asarray(jax.jit(op)(X, Y)), 2 * np.asarray(X) + np.asarray(Y))
    configs = [brainevent.BenchmarkConfig("n=4096", (X, Y))]
    result = op.benchmark(platform="gpu", n_warmup=2, n_runs=10, configs=configs, set_default=True)
    ok = {r.backend for r in result.records if r.success}
    assert ok == {"numba_cuda", "cuda_raw", "numba_cuda_gen", "jnp"}
    assert result.chosen in ok and op.get_default("gpu") == result.chosen
    print(result.table())
