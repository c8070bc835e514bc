"""The seeds' CUDA examples, verbatim, on a real GPU (skipped without one)."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from tests.support.kernels import CUDA_VECTOR_ADD as TUTORIAL_ADD

pytestmark = [pytest.mark.gpu, pytest.mark.nvcc]

# --- seeds/002: the CUDA tutorial --------------------------------------------------------------

TUTORIAL_SCALE = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"

__global__ void scale_kernel(const float* x, float* out, int n, float factor) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) out[idx] = x[idx] * factor;
}

// @BE scale_by arg ret attr.scale_factor:float32 stream
void scale_by(const BE::Tensor x, BE::Tensor out,
              float scale_factor, int64_t stream) {
    int n = x.numel();
    scale_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        static_cast<const float*>(x.data_ptr()),
        static_cast<float*>(out.data_ptr()), n, scale_factor);
    BE_CHECK_KERNEL_LAUNCH();
}
"""


def test_seed_tutorial_verbatim() -> None:
    # 1. A vector-add kernel
    CUDA_SRC = TUTORIAL_ADD
    mod = brainevent.load_cuda_inline(
        name="my_kernels",
        cuda_sources=CUDA_SRC,
        functions=None,  # discovered from the // @BE annotation
    )
    a = jnp.ones(1024, dtype=jnp.float32)
    b = jnp.full(1024, 2.0, dtype=jnp.float32)

    result = jax.ffi.ffi_call(
        "my_kernels.vector_add",
        jax.ShapeDtypeStruct(a.shape, a.dtype),
    )(a, b)
    np.testing.assert_array_equal(np.asarray(result[:5]), [3.0, 3.0, 3.0, 3.0, 3.0])
    assert mod.registered and mod.platform == "cuda"

    # 2. Scalar attributes
    CUDA_SRC = TUTORIAL_SCALE
    mod = brainevent.load_cuda_inline(name="scale_ops", cuda_sources=CUDA_SRC)
    result = jax.ffi.ffi_call(
        "scale_ops.scale_by",
        jax.ShapeDtypeStruct(a.shape, a.dtype),
    )(a, scale_factor=np.float32(3.0))
    np.testing.assert_array_equal(np.asarray(result[:5]), [3.0] * 5)
    # A Python float works too: converted with a range check.
    result = jax.ffi.ffi_call("scale_ops.scale_by", jax.ShapeDtypeStruct(a.shape, a.dtype))(
        a, scale_factor=3.0
    )
    np.testing.assert_array_equal(np.asarray(result), np.full(1024, 3.0))

    # 3. Compiler options
    mod = brainevent.load_cuda_inline(
        name="fast_kernels",
        cuda_sources=CUDA_SRC,
        optimization_level=3,
        use_fast_math=True,
    )
    assert mod.registered and mod.target_names == ["fast_kernels.scale_by"]
    fast = jax.ffi.ffi_call("fast_kernels.scale_by", jax.ShapeDtypeStruct(a.shape, a.dtype))(
        a, scale_factor=0.5
    )
    np.testing.assert_allclose(np.asarray(fast), np.full(1024, 0.5))

    # 4. jax.jit
    @jax.jit
    def add_jit(a, b):
        return jax.ffi.ffi_call(
            "my_kernels.vector_add",
            jax.ShapeDtypeStruct(a.shape, a.dtype),
        )(a, b)

    np.testing.assert_array_equal(np.asarray(add_jit(a, b)), np.full(1024, 3.0))


# --- seeds/001: compiler options ----------------------------------------------------------------

MY_FUNC = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"

__global__ void sqrt_kernel(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = sqrtf(x[i]) / 3.0f;
}

void my_func(const BE::Tensor x, BE::Tensor out, int64_t stream) {
    int n = x.numel();
    sqrt_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), n);
    BE_CHECK_KERNEL_LAUNCH();
}
"""


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"optimization_level": 0},
        {"optimization_level": 3},
        {"use_fast_math": True},
        {
            "extra_cuda_cflags": [
                "--generate-line-info",
                "-maxrregcount=64",
                "--ptxas-options=-v",
                "-Xcompiler",
                "-march=native",
            ]
        },
        {"allow_cuda_graph": True},
        {"allow_cuda_graph": False},
        {"optimization_level": 3, "use_fast_math": True},
    ],
    ids=["default", "O0", "O3", "fast_math", "extra_flags", "graph", "no_graph", "peak_perf"],
)
def test_seed_compiler_options(options: dict[str, object]) -> None:
    CUDA_SRC = MY_FUNC
    name = "opts_" + "_".join(f"{k}_{v}" for k, v in sorted(options.items()) if k != "extra_cuda_cflags")
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in name) + (
        "_flags" if "extra_cuda_cflags" in options else ""
    )
    mod = brainevent.load_cuda_inline(
        name=name,
        cuda_sources=CUDA_SRC,
        functions={"my_func": ["arg", "ret", "stream"]},
        **options,  # type: ignore[arg-type]
    )
    x = jnp.linspace(0.0, 100.0, 4096, dtype=jnp.float32)
    got = np.asarray(jax.jit(mod.my_func)(x))
    rtol = 1e-5 if options.get("use_fast_math") else 1e-6
    np.testing.assert_allclose(got, np.sqrt(np.asarray(x)) / 3.0, rtol=rtol)


def test_seed_architecture_example_explicit_functions() -> None:
    mod = brainevent.load_cuda_inline(
        name="arch_kernels",
        cuda_sources=TUTORIAL_ADD,
        functions={"vector_add": ["arg", "arg", "ret", "stream"]},
    )
    assert mod.specs == {"vector_add": ["arg", "arg", "ret", "stream"]}
    a = jnp.arange(2048, dtype=jnp.float32)
    out_spec = jax.ShapeDtypeStruct(a.shape, a.dtype)
    result = jax.ffi.ffi_call("arch_kernels.vector_add", out_spec)(a, a)
    np.testing.assert_array_equal(np.asarray(result), 2 * np.arange(2048))
    # Re-importing the same module is a safe no-op.
    again = brainevent.load_cuda_inline(
        name="arch_kernels",
        cuda_sources=TUTORIAL_ADD,
        functions={"vector_add": ["arg", "arg", "ret", "stream"]},
    )
    assert not again.built_now
    np.testing.assert_array_equal(
        np.asarray(jax.ffi.ffi_call("arch_kernels.vector_add", out_spec)(a, a)), 2 * a
    )


# --- a directory of three .cu files with a shared header ---------------------------------------

DIR_FILES = {
    "ops.cuh": "#pragma once\n__device__ inline float axpy(float a, float x, float y) { return a * x + y; }\n",
    "axpy.cu": (
        '#include <cuda_runtime.h>\n#include "brainevent/common.h"\n#include "ops.cuh"\n'
        "__global__ void k(const float* x, const float* y, float* o, float a, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) o[i] = axpy(a, x[i], y[i]); }\n"
        "// @BE axpy arg arg ret attr.a:float32 stream\n"
        "void axpy(const BE::Tensor x, const BE::Tensor y, BE::Tensor out, float a, int64_t stream) {\n"
        "  int n = x.numel();\n"
        "  k<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(x.data_ptr<float>(), y.data_ptr<float>(),\n"
        "      out.data_ptr<float>(), a, n);\n  BE_CHECK_KERNEL_LAUNCH();\n}\n"
    ),
    "negate.cu": (
        '#include <cuda_runtime.h>\n#include "brainevent/common.h"\n#include "ops.cuh"\n'
        "__global__ void k(const float* x, float* o, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) o[i] = axpy(-1.0f, x[i], 0.0f); }\n"
        "// @BE negate arg ret stream\n"
        "void negate(const BE::Tensor x, BE::Tensor out, int64_t stream) {\n"
        "  int n = x.numel();\n"
        "  k<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);\n"
        "}\n"
    ),
    "rowsum.cu": (
        '#include <cuda_runtime.h>\n#include "brainevent/common.h"\n'
        "__global__ void k(const float* x, float* o, int rows, int cols) {\n"
        "  int r = blockIdx.x * blockDim.x + threadIdx.x; if (r >= rows) return;\n"
        "  float s = 0; for (int c = 0; c < cols; ++c) s += x[r * cols + c]; o[r] = s; }\n"
        "// @BE rowsum arg ret stream\n"
        "void rowsum(const BE::Tensor x, BE::Tensor out, int64_t stream) {\n"
        '  BE_CHECK(x.ndim() == 2) << "rowsum expects a matrix, got rank " << x.ndim();\n'
        "  int rows = x.size(0), cols = x.size(1);\n"
        "  k<<<(rows + 127) / 128, 128, 0, (cudaStream_t)stream>>>(x.data_ptr<float>(), out.data_ptr<float>(),\n"
        "      rows, cols);\n}\n"
    ),
}


def test_load_cuda_dir_three_files_shared_header(tmp_path: Path) -> None:
    src = tmp_path / "gpu_ops"
    src.mkdir()
    for name, text in DIR_FILES.items():
        (src / name).write_text(text)
    mod = brainevent.load_cuda_dir(src)
    assert sorted(mod.functions) == ["axpy", "negate", "rowsum"]
    x = jnp.arange(1000, dtype=jnp.float32)
    y = jnp.ones(1000, dtype=jnp.float32)
    np.testing.assert_allclose(
        np.asarray(jax.jit(lambda x, y: mod.axpy(x, y, a=2.0))(x, y)), 2 * np.arange(1000) + 1
    )
    np.testing.assert_array_equal(np.asarray(mod.negate(x)), -np.arange(1000))
    m = jnp.asarray(np.random.default_rng(1).normal(size=(300, 17)).astype(np.float32))
    np.testing.assert_allclose(
        np.asarray(mod.rowsum(m, outs=jax.ShapeDtypeStruct((300,), jnp.float32))),
        np.asarray(m).sum(1),
        rtol=1e-5,
    )
    with pytest.raises(jax.errors.JaxRuntimeError, match="rowsum expects a matrix, got rank 1"):
        np.asarray(mod.rowsum(x, outs=jax.ShapeDtypeStruct((1,), jnp.float32)))


# --- runtime errors on the GPU ------------------------------------------------------------------

BAD_LAUNCH = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"
__global__ void fill(float* o, int n) { int i = threadIdx.x; if (i < n) o[i] = 1.0f; }
// @BE bad_launch ret stream
void bad_launch(BE::Tensor out, int64_t stream) {
    fill<<<1, 4096, 0, (cudaStream_t)stream>>>(out.data_ptr<float>(), (int)out.numel());  // > 1024 threads
    BE_CHECK_KERNEL_LAUNCH();
}
// @BE good ret stream
void good(BE::Tensor out, int64_t stream) {
    fill<<<1, 256, 0, (cudaStream_t)stream>>>(out.data_ptr<float>(), (int)out.numel());
    BE_CUDA_CHECK(cudaGetLastError());
}
"""


def test_launch_error_surfaces_and_process_survives() -> None:
    mod = brainevent.load_cuda_inline(name="gpu_bad_launch", cuda_sources=BAD_LAUNCH)
    spec = jax.ShapeDtypeStruct((16,), jnp.float32)
    with pytest.raises(
        jax.errors.JaxRuntimeError, match=r"gpu_bad_launch.cu:8: cudaGetLastError\(\) failed: cudaError\w+"
    ):
        np.asarray(jax.ffi.ffi_call("gpu_bad_launch.bad_launch", spec)())
    np.testing.assert_array_equal(np.asarray(mod.good(outs=spec)), np.ones(16))


def test_kernel_in_fori_loop_and_vmap() -> None:
    mod = brainevent.load_cuda_inline(name="loop_scale", cuda_sources=TUTORIAL_SCALE)
    x = jnp.ones(1024, jnp.float32)

    @jax.jit
    def run(x):
        return jax.lax.fori_loop(0, 1000, lambda i, v: mod.scale_by(v, scale_factor=1.001), x)

    np.testing.assert_allclose(np.asarray(run(x)), np.full(1024, 1.001**1000, np.float32), rtol=1e-3)


def test_fori_loop_captured_in_cuda_graphs_matches(tmp_path: Path) -> None:
    """With custom calls in command buffers, the graph-compatible handler replays correctly."""
    import os
    import subprocess
    import sys

    code = (
        "import brainevent\n"
        "assert brainevent.enable_cuda_graphs()\n"
        "import jax, jax.numpy as jnp, numpy as np\n"
        f"mod = brainevent.load_cuda_inline(name='graph_scale', cuda_sources={TUTORIAL_SCALE!r})\n"
        "run = jax.jit(lambda x: jax.lax.fori_loop(0, 1000, lambda i, v: mod.scale_by(v, scale_factor=1.001), x))\n"
        "for _ in range(3):\n"
        "    out = np.asarray(run(jnp.ones(1024, jnp.float32)))\n"
        "    np.testing.assert_allclose(out, np.full(1024, 1.001 ** 1000, np.float32), rtol=1e-3)\n"
        "print('ok')\n"
    )
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    env.pop("XLA_FLAGS", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
