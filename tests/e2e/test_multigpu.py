"""Kernels on several GPUs: per-device launches, shard_map, jax.distributed.

Skipped unless the driver API finds at least two GPUs.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent

pytestmark = [pytest.mark.gpu, pytest.mark.nvcc]

SRC = str(Path(__file__).resolve().parents[2] / "src")

AXPB = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"
__global__ void axpb_kernel(const float* x, float* out, float a, float b, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + b;
}
// @BE axpb arg ret attr.a:float32 attr.b:float32 stream
void axpb(const BE::Tensor x, BE::Tensor out, float a, float b, int64_t stream) {
    int64_t n = x.numel();
    axpb_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), a, b, n);
    BE_CHECK_KERNEL_LAUNCH();
}
"""


@pytest.fixture(scope="module")
def gpus() -> list[jax.Device]:
    devices = jax.devices("gpu")
    if len(devices) < 2:
        pytest.skip(f"needs two GPUs, found {len(devices)}")
    return devices


@pytest.fixture(scope="module")
def mod() -> brainevent.CompiledModule:
    return brainevent.load_cuda_inline(name="multi_axpb", cuda_sources=AXPB)


def test_runs_on_every_device(gpus: list[jax.Device], mod: brainevent.CompiledModule) -> None:
    f = jax.jit(lambda x: mod.axpb(x, a=2.0, b=1.0))
    for device in gpus:
        x = jax.device_put(jnp.arange(4096, dtype=jnp.float32), device)
        out = f(x)
        assert out.devices() == {device}
        np.testing.assert_array_equal(np.asarray(out), 2 * np.arange(4096) + 1)


def test_shard_map_over_two_gpus(gpus: list[jax.Device], mod: brainevent.CompiledModule) -> None:
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(gpus[:2]), ("d",))
    x = jax.device_put(jnp.arange(8192, dtype=jnp.float32), NamedSharding(mesh, P("d")))
    shard_map = (
        getattr(jax, "shard_map", None) or __import__("jax.experimental.shard_map", fromlist=["x"]).shard_map
    )
    f = jax.jit(shard_map(lambda s: mod.axpb(s, a=3.0, b=-1.0), mesh=mesh, in_specs=P("d"), out_specs=P("d")))
    out = f(x)
    np.testing.assert_array_equal(np.asarray(out), 3 * np.arange(8192) - 1)
    assert len(out.sharding.device_set) == 2


WORKER = textwrap.dedent(
    """
    import json, os, sys
    import jax
    jax.distributed.initialize(coordinator_address=sys.argv[1], num_processes=2, process_id=int(sys.argv[2]))
    import jax.numpy as jnp, numpy as np
    import brainevent
    mod = brainevent.load_cuda_inline(name="dist_axpb", cuda_sources=sys.argv[3])
    x = jnp.arange(1024, dtype=jnp.float32) + 1000 * jax.process_index()
    local = np.asarray(mod.axpb(x, a=2.0, b=0.0))
    ok = bool(np.array_equal(local, 2 * np.asarray(x)))
    from jax.experimental import multihost_utils
    total = multihost_utils.process_allgather(jnp.asarray([local.sum()]))
    print(json.dumps({"built_now": mod.built_now, "ok": ok, "total": float(np.asarray(total).sum()),
                      "devices": jax.device_count(), "local": jax.local_device_count()}))
    """
)


def test_jax_distributed_two_processes_compile_once(gpus: list[jax.Device], tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=SRC, BRAINEVENT_CACHE_DIR=str(tmp_path / "shared-cache"))
    procs = []
    for rank in range(2):
        env_rank = dict(env, CUDA_VISIBLE_DEVICES=str(rank))
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", WORKER, f"127.0.0.1:{port}", str(rank), AXPB],
                env=env_rank,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-4000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert all(r["ok"] for r in results)
    assert sum(r["built_now"] for r in results) == 1  # one compiled; the other waited and loaded
    expected = sum(2 * (np.arange(1024) + 1000 * rank).sum() for rank in range(2))
    assert all(r["total"] == expected for r in results)
    assert all(r["devices"] == 2 and r["local"] == 1 for r in results)


ROWS = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"
__global__ void rows_kernel(const float* x, float* out, float scale, float rows, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] * scale + rows;
}
// Offsets every element by the number of rows the call sees: 4 on a local shard, 8 gathered.
// @BE rows arg ret attr.scale:float32 stream
void rows(const BE::Tensor x, BE::Tensor out, float scale, int64_t stream) {
    int64_t n = x.numel();
    rows_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), scale, (float)x.size(0), n);
    BE_CHECK_KERNEL_LAUNCH();
}
"""


def _sharded_rows(gpus: list[jax.Device]) -> tuple[np.ndarray, jax.Array]:
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(gpus[:2]), ("b",))
    host = np.arange(8 * 1024, dtype=np.float32).reshape(8, 1024)
    return host, jax.device_put(host, NamedSharding(mesh, P("b")))


@pytest.mark.parametrize("num_batch_dims", [1, None])
def test_jit_with_sharded_inputs_does_not_gather(gpus: list[jax.Device], num_batch_dims: int | None) -> None:
    mod = brainevent.load_cuda_inline(name="multi_rows", cuda_sources=ROWS)
    op = brainevent.XLACustomKernel("rows", num_batch_dims=num_batch_dims).def_kernel("gpu", mod.rows)
    host, x = _sharded_rows(gpus)
    f = jax.jit(lambda x: op(x, outs=jax.ShapeDtypeStruct(x.shape, x.dtype), scale=2.0))
    hlo = f.lower(x).compile().as_text()
    out = f(x)
    if num_batch_dims:
        assert "all-gather" not in hlo
        assert len(out.sharding.device_set) == 2 and list(out.sharding.spec) == ["b"]
        np.testing.assert_array_equal(np.asarray(out), host * 2 + 4)  # each GPU saw its 4 rows
    else:  # the control: not declared partitionable, so XLA gathers the rows onto each call
        assert "all-gather" in hlo
        np.testing.assert_array_equal(np.asarray(out), host * 2 + 8)


def test_numba_cuda_kernel_batch_partitioned(gpus: list[jax.Device]) -> None:
    cuda = pytest.importorskip("numba.cuda")

    @cuda.jit
    def double_rows(x, out):  # type: ignore[no-untyped-def]
        i, j = cuda.grid(2)
        if i < out.shape[0] and j < out.shape[1]:
            out[i, j] = 2 * x[i, j] + x.shape[0]

    op = brainevent.XLACustomKernel("double_rows", num_batch_dims=1)
    op.def_numba_cuda_kernel(double_rows, launch_dims=lambda ins, outs: outs[0].shape)
    host, x = _sharded_rows(gpus)
    f = jax.jit(lambda x: op(x, outs=jax.ShapeDtypeStruct(x.shape, x.dtype)))
    assert "all-gather" not in f.lower(x).compile().as_text()
    np.testing.assert_array_equal(np.asarray(f(x)), host * 2 + 4)


def test_numba_cuda_callable_on_each_gpu(gpus: list[jax.Device]) -> None:
    cuda = pytest.importorskip("numba.cuda")

    @cuda.jit
    def add_one(x, out):  # type: ignore[no-untyped-def]
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] + 1

    def launch(x, out, stream):  # type: ignore[no-untyped-def]
        add_one[(x.size + 255) // 256, 256, stream](x, out)

    f = jax.jit(brainevent.numba_cuda_callable(launch, jax.ShapeDtypeStruct((4096,), jnp.float32)))
    for device in gpus:
        x = jax.device_put(jnp.arange(4096, dtype=jnp.float32), device)
        out = f(x)
        assert out.devices() == {device}
        np.testing.assert_array_equal(np.asarray(out), np.arange(4096) + 1)


def test_nvrtc_cuda_kernel_on_each_gpu(gpus: list[jax.Device]) -> None:
    # The cubin is loaded into each device's context when XLA first calls it there.
    add_one = brainevent.cuda_kernel(
        r"""
        extern "C" __global__ void add_one(const float* x, float* out, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) out[i] = x[i] + 1.0f;
        }
        """,
        "add_one",
        jax.ShapeDtypeStruct((4096,), jnp.float32),
        launch_dims=4096,
        n=4096,
    )
    f = jax.jit(add_one)
    for device in gpus:
        x = jax.device_put(jnp.arange(4096, dtype=jnp.float32), device)
        out = f(x)
        assert out.devices() == {device}
        np.testing.assert_array_equal(np.asarray(out), np.arange(4096) + 1)
