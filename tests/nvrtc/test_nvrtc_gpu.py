"""``brainevent.cuda_kernel`` on the GPU, against NumPy: the tutorial's kernels under jit,
every vmap method, a 1000-step fori_loop, shard_map, in-place updates, and as an
XLACustomKernel backend (``def_cuda_kernel``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent.nvrtc.kernel import ctype

from .kernels import AXPY, BLOCK_SUM, HISTOGRAM, VECTOR_ADD

# The launcher library is built by the host compiler, the kernels by NVRTC: no nvcc.
pytestmark = [pytest.mark.gpu, pytest.mark.host]

N = 1000  # not a multiple of the block: the bounds check matters


def spec(a: Any) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(a.shape, a.dtype)


def vector_add(x: Any, **kw: Any) -> Any:
    return brainevent.cuda_kernel(
        VECTOR_ADD, "add", spec(x), launch_dims=lambda x, y: x.size, n=lambda x, y: x.size, **kw
    )


def data(n: int = N) -> tuple[np.ndarray, np.ndarray]:
    return np.linspace(-2, 3, n, dtype=np.float32), np.cos(np.arange(n, dtype=np.float32))


def test_vector_add_under_jit_and_eagerly() -> None:
    x, y = data()
    add = vector_add(x)
    np.testing.assert_allclose(np.asarray(jax.jit(add)(x, y)), x + y, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(add(x, y)), x + y, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_a_template_is_instantiated_per_call_dtype(dtype: Any) -> None:
    x = np.arange(N).astype(dtype)
    y = (np.arange(N) % 7).astype(dtype)
    axpy = brainevent.cuda_kernel(
        AXPY,
        lambda x, y: f"axpy<{ctype(x.dtype)}>",
        spec(x),
        launch_dims=N,
        a=3,
        n=N,
    )
    np.testing.assert_array_equal(np.asarray(jax.jit(axpy)(x, y)), 3 * x + y)


def test_a_templated_block_reduction_with_a_compile_time_block() -> None:
    block, n = 256, 10 * 256 - 17
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    blocks = -(-n // block)
    partial = brainevent.cuda_kernel(
        BLOCK_SUM,
        f"block_sum<float, {block}>",
        jax.ShapeDtypeStruct((blocks,), np.float32),
        grid=blocks,
        block=block,
        n=n,
    )
    want = np.pad(x, (0, blocks * block - n)).reshape(blocks, block).sum(axis=1)
    np.testing.assert_allclose(np.asarray(jax.jit(partial)(x)), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("method", ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all"])
def test_every_vmap_method_runs_the_kernel_per_batch_element(method: str) -> None:
    x, y = data(256)
    xs = np.stack([x + b for b in range(4)])
    add = vector_add(x, vmap_method=method)
    got = jax.jit(jax.vmap(add, in_axes=(0, None)))(xs, y)
    np.testing.assert_allclose(np.asarray(got), xs + y, rtol=1e-6)
    ys = np.stack([y, 2 * y, 3 * y, 4 * y])
    got = jax.jit(jax.vmap(add))(xs, ys)
    np.testing.assert_allclose(np.asarray(got), xs + ys, rtol=1e-6)


def test_without_a_vmap_method_vmap_is_refused() -> None:
    x, y = data(8)
    with pytest.raises(Exception, match="vmap"):
        jax.vmap(vector_add(x), in_axes=(0, None))(np.stack([x, x]), y)


def test_a_thousand_step_fori_loop() -> None:
    x = np.arange(N, dtype=np.float32)
    ones = np.ones(N, np.float32)
    add = vector_add(x)
    loop = jax.jit(lambda u, w: jax.lax.fori_loop(0, 1000, lambda _, v: add(v, w), u))
    np.testing.assert_array_equal(np.asarray(loop(x, ones)), x + 1000)


def test_scan_carries_the_result() -> None:
    x, y = data()
    add = vector_add(x)
    got, _ = jax.jit(lambda u: jax.lax.scan(lambda c, _: (add(c, y), None), u, None, length=3))(x)
    np.testing.assert_allclose(np.asarray(got), x + 3 * y, rtol=1e-5, atol=1e-6)  # rounding of 3 adds


def test_shard_map_over_every_gpu() -> None:
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    devices = jax.devices("gpu")
    mesh = jax.make_mesh((len(devices),), ("b",), devices=devices)
    x, y = data(256 * len(devices))
    rows = NamedSharding(mesh, P("b"))
    x, y = np.asarray(x), np.asarray(y)
    xs, ys = jax.device_put(x, rows), jax.device_put(y, rows)  # placed as in_specs says

    def body(a: Any, b: Any) -> Any:  # sees this device's shard: the sizes are local
        return vector_add(a)(a, b)

    f = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P("b"), P("b")), out_specs=P("b")))
    np.testing.assert_allclose(np.asarray(f(xs, ys)), x + y, rtol=1e-6)
    loop = jax.jit(
        jax.shard_map(
            lambda a, b: jax.lax.fori_loop(0, 5, lambda _, v: body(v, b), a),
            mesh=mesh,
            in_specs=(P("b"), P("b")),
            out_specs=P("b"),
        )
    )
    np.testing.assert_allclose(np.asarray(loop(xs, ys)), x + 5 * y, rtol=1e-5, atol=1e-6)


def rows_add(rows: int, n: int) -> Any:
    """``vector_add`` written for one row, declared over a batch of ``rows`` rows."""
    return brainevent.cuda_kernel(
        VECTOR_ADD,
        "add",
        jax.ShapeDtypeStruct((rows, n), np.float32),
        launch_dims=lambda x, y: x.size,
        num_batch_dims=1,
        vmap_method="expand_dims",
        n=lambda x, y: x.size,
    )


def test_batch_dims_run_the_kernel_per_row_and_broadcast_under_vmap() -> None:
    x = np.arange(6 * 300, dtype=np.float32).reshape(6, 300)
    y = np.cos(x)
    add = rows_add(6, 300)
    np.testing.assert_allclose(np.asarray(jax.jit(add)(x, y)), x + y, rtol=1e-6)
    xs = np.stack([x, 2 * x, 3 * x])  # vmap adds a batch dim; y's is 1 (broadcast)
    got = jax.jit(jax.vmap(add, in_axes=(0, None)))(xs, y)
    np.testing.assert_allclose(np.asarray(got), xs + y, rtol=1e-6)
    loop = jax.jit(lambda a, b: jax.lax.fori_loop(0, 3, lambda _, v: add(v, b), a))
    np.testing.assert_allclose(np.asarray(loop(x, y)), x + 3 * y, rtol=1e-5, atol=1e-5)


def test_sharded_jit_with_batch_dims_runs_on_the_local_shards() -> None:
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    devices = jax.devices("gpu")
    mesh = jax.make_mesh((len(devices),), ("b",), devices=devices)
    rows = NamedSharding(mesh, P("b"))
    x = np.arange(4 * len(devices) * 500, dtype=np.float32).reshape(4 * len(devices), 500)
    y = np.sin(x)
    add = jax.jit(rows_add(*x.shape))
    a, b = jax.device_put(x, rows), jax.device_put(y, rows)
    np.testing.assert_allclose(np.asarray(add(a, b)), x + y, rtol=1e-6)
    assert "all-gather" not in add.lower(a, b).compile().as_text()
    op = brainevent.XLACustomKernel(
        "nvrtc_rows_gpu", outs=lambda x, y, **_: jax.ShapeDtypeStruct(x.shape, x.dtype), num_batch_dims=1
    )
    op.def_cuda_kernel(
        VECTOR_ADD, "add", launch_dims=lambda ins, outs: outs[0].size, n=lambda ins, outs: outs[0].size
    )
    f = jax.jit(lambda p, q: op(p, q))
    np.testing.assert_allclose(np.asarray(f(a, b)), x + y, rtol=1e-6)
    assert "all-gather" not in f.lower(a, b).compile().as_text()


@pytest.mark.parametrize(("xshape", "yshape"), [((8, 1024), (1, 1024)), ((1, 1024), (8, 1024))])
def test_an_operand_whose_batch_dim_is_1_is_broadcast(
    xshape: tuple[int, ...], yshape: tuple[int, ...]
) -> None:
    """docs/nvrtc.md's promise, for cuda_kernel and def_cuda_kernel (it was a KernelCallError)."""
    x = np.arange(np.prod(xshape), dtype=np.float32).reshape(xshape)
    y = np.cos(np.arange(np.prod(yshape), dtype=np.float32)).reshape(yshape)
    add = rows_add(8, 1024)
    np.testing.assert_allclose(np.asarray(add(x, y)), x + y, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.jit(add)(x, y)), x + y, rtol=1e-6)
    op = brainevent.XLACustomKernel(
        f"nvrtc_rows_broadcast_{xshape[0]}",
        outs=lambda x, y, **_: jax.ShapeDtypeStruct(np.broadcast_shapes(x.shape, y.shape), x.dtype),
        num_batch_dims=1,
    )
    op.def_cuda_kernel(
        VECTOR_ADD, "add", launch_dims=lambda ins, outs: outs[0].size, n=lambda ins, outs: outs[0].size
    )
    np.testing.assert_allclose(np.asarray(jax.jit(lambda p, q: op(p, q))(x, y)), x + y, rtol=1e-6)


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0)], ids=str)
@pytest.mark.parametrize("method", ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all"])
def test_every_vmap_method_of_a_batch_dims_kernel(
    method: str, in_axes: tuple[int | None, int | None]
) -> None:
    x = np.arange(6 * 300, dtype=np.float32).reshape(6, 300)
    y = np.cos(x)
    xs, ys = np.stack([x, 2 * x, 3 * x]), np.stack([y, y + 1, y + 2])
    add = brainevent.cuda_kernel(
        VECTOR_ADD, "add", jax.ShapeDtypeStruct((6, 300), np.float32), launch_dims=lambda x, y: x.size,
        num_batch_dims=1, vmap_method=method, n=lambda x, y: x.size,
    )  # fmt: skip
    a, b = (xs if in_axes[0] == 0 else x), (ys if in_axes[1] == 0 else y)
    got = jax.jit(jax.vmap(add, in_axes=in_axes))(a, b)
    np.testing.assert_allclose(np.asarray(got), np.broadcast_to(a + b, (3, 6, 300)), rtol=1e-6)


def test_sharded_jit_with_a_broadcast_operand() -> None:
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    devices = jax.devices("gpu")
    mesh = jax.make_mesh((len(devices),), ("b",), devices=devices)
    x = np.arange(4 * len(devices) * 500, dtype=np.float32).reshape(4 * len(devices), 500)
    y = np.sin(np.arange(500, dtype=np.float32)).reshape(1, 500)
    add = jax.jit(rows_add(*x.shape))
    a, b = jax.device_put(x, NamedSharding(mesh, P("b"))), jax.device_put(y, NamedSharding(mesh, P()))
    np.testing.assert_allclose(np.asarray(add(a, b)), x + y, rtol=1e-6)
    assert "all-gather" not in add.lower(a, b).compile().as_text()


def test_in_place_update_through_an_alias() -> None:
    source = r"""
    extern "C" __global__ void scale(const float* x, float* out, float s, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) out[i] = s * x[i];
    }
    """
    x, _ = data()
    scale = brainevent.cuda_kernel(
        source, "scale", spec(x), launch_dims=N, s=0.5, n=N, input_output_aliases={0: 0}
    )
    np.testing.assert_allclose(np.asarray(jax.jit(scale)(jnp.asarray(x))), 0.5 * x, rtol=1e-6)


def test_a_zeroed_histogram_starts_from_zero_under_jit_vmap_and_batch_dims() -> None:
    bins = 7
    x = np.random.default_rng(0).integers(0, bins, size=(4, N)).astype(np.int32)
    expected = np.stack([np.bincount(row, minlength=bins) for row in x]).astype(np.int32)

    def histogram(shape: tuple[int, ...], **kw: Any) -> Any:
        return brainevent.cuda_kernel(
            HISTOGRAM, "histogram", jax.ShapeDtypeStruct(shape, np.int32), launch_dims=N, n=N, bins=bins,
            zeros=True, **kw,
        )  # fmt: skip

    one = histogram((bins,), vmap_method="sequential")
    twice = jax.jit(lambda v: one(v) + one(v))
    for _ in range(3):  # the same buffers again: each call starts from zero
        np.testing.assert_array_equal(np.asarray(twice(x[0])), 2 * expected[0])
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(one))(x)), expected)
    rows = histogram((4, bins), num_batch_dims=1, vmap_method="sequential")
    np.testing.assert_array_equal(np.asarray(jax.jit(rows)(x)), expected)


def test_a_kernel_file_with_a_header_from_include_dirs(tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "ops.cuh").write_text(
        "__device__ inline float combine(float a, float b) { return a - b; }\n"
    )
    path = tmp_path / "sub.cu"
    path.write_text(
        '#include "ops.cuh"\n'
        'extern "C" __global__ void sub(const float* x, const float* y, float* o, int n) {\n'
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) o[i] = combine(x[i], y[i]);\n"
        "}\n"
    )
    x, y = data()
    sub = brainevent.cuda_kernel(path, "sub", spec(x), launch_dims=N, n=N, include_dirs=[tmp_path / "inc"])
    np.testing.assert_allclose(np.asarray(jax.jit(sub)(x, y)), x - y, rtol=1e-6)


def test_half_precision_through_cuda_fp16() -> None:
    source = "#include <cuda_fp16.h>\n" + AXPY
    x = np.linspace(-1, 1, N).astype(np.float16)
    y = np.ones(N, np.float16)
    axpy = brainevent.cuda_kernel(source, "axpy<__half>", spec(x), launch_dims=N, a=2.0, n=N)
    np.testing.assert_allclose(
        np.asarray(jax.jit(axpy)(x, y)).astype(np.float32), 2 * x.astype(np.float32) + 1, atol=5e-3
    )


def test_nothing_to_launch_gives_zeros() -> None:
    x = np.zeros(0, np.float32)
    add = brainevent.cuda_kernel(VECTOR_ADD, "add", spec(x), launch_dims=0, n=0)
    assert np.asarray(jax.jit(add)(x, x)).shape == (0,)


def test_as_an_xla_custom_kernel_backend_with_attributes() -> None:
    op = brainevent.XLACustomKernel("nvrtc_axpy_backend")
    op.def_cuda_kernel(
        AXPY,
        lambda ins, outs: f"axpy<{ctype(ins[0].dtype)}>",
        launch_dims=lambda ins, outs: outs[0].size,
        n=lambda ins, outs: outs[0].size,
    )
    assert op.available_backends("gpu") == ["nvrtc"]
    x, y = data()
    f = jax.jit(lambda a, b: op(a, b, outs=spec(a), a=2.0))
    np.testing.assert_allclose(np.asarray(f(x, y)), 2 * x + y, rtol=1e-6)
    loop = jax.jit(lambda u: jax.lax.fori_loop(0, 10, lambda _, v: op(v, y, outs=spec(v), a=1.0), u))
    # Ten float32 additions round differently from NumPy's one product: compare with a bound
    # on the accumulated rounding, not bit for bit.
    np.testing.assert_allclose(np.asarray(loop(x)), x + 10 * y, rtol=1e-5, atol=1e-5)


# A fresh process that runs the vector add on the GPU: which NVRTC libraries were mapped before
# brainevent's first call (JAX's CUDA plugin may load libnvrtc itself) and after it, and whether
# it started a process (NVRTC's worker).
RUN_ON_GPU = r"""
import json, os, sys
from pathlib import Path
import jax, numpy as np, brainevent

def nvrtc_mapped():
    names = {os.path.basename(l.split()[-1]) for l in open("/proc/self/maps") if "/" in l}
    return sorted(n for n in names if n.startswith("libnvrtc"))

x = jax.device_put(np.arange(1024, dtype=np.float32))
before = nvrtc_mapped()
add = brainevent.cuda_kernel(sys.argv[1], "add", jax.ShapeDtypeStruct(x.shape, x.dtype),
                             launch_dims=lambda x, y: x.size, n=lambda x, y: x.size)
out = np.asarray(jax.jit(add)(x, x))
children = [c for t in Path("/proc/self/task").iterdir() for c in (t / "children").read_text().split()]
print(json.dumps({"ok": bool((out == 2 * np.arange(1024)).all()), "before": before,
                  "after": nvrtc_mapped(), "children": children}))
"""


def test_a_hit_on_the_gpu_neither_loads_nor_starts_nvrtc(tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    env = dict(
        os.environ, BRAINEVENT_CACHE_DIR=str(tmp_path), PYTHONPATH=str(Path(brainevent.__file__).parents[1])
    )
    for _attempt in ("miss", "hit"):
        done = subprocess.run(
            [sys.executable, "-c", RUN_ON_GPU, VECTOR_ADD],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
    hit = json.loads(done.stdout.strip().splitlines()[-1])
    assert hit["ok"]
    # Whatever JAX itself loaded, the hit added nothing, and NVRTC never compiled (its builtins).
    assert hit["after"] == hit["before"], hit
    assert not [n for n in hit["after"] if n.startswith("libnvrtc-builtins")], hit
    assert hit["children"] == [], hit
