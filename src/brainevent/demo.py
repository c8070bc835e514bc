"""`brainevent demo`: compile a kernel for the best platform present, run it, check it."""

from __future__ import annotations

import time
from collections.abc import Callable

CPU_DEMO = r"""
#include "brainevent/common.h"

// @BE saxpy arg arg ret attr.alpha:float32 stream
void saxpy(const BE::Tensor x, const BE::Tensor y, BE::Tensor out, float alpha, int64_t stream) {
    BE_CHECK(x.numel() == y.numel()) << "x and y differ in size";
    const float* px = x.data_ptr<float>();
    const float* py = y.data_ptr<float>();
    float* po = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) po[i] = alpha * px[i] + py[i];
}
"""

GPU_DEMO = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"

__global__ void saxpy_kernel(const float* x, const float* y, float* out, float alpha, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = alpha * x[i] + y[i];
}

// @BE saxpy arg arg ret attr.alpha:float32 stream
void saxpy(const BE::Tensor x, const BE::Tensor y, BE::Tensor out, float alpha, int64_t stream) {
    int64_t n = x.numel();
    saxpy_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), alpha, n);
    BE_CHECK_KERNEL_LAUNCH();
}
"""


def run_demo(print_fn: Callable[[str], object] = print) -> int:
    import jax
    import jax.numpy as jnp
    import numpy as np

    import brainevent
    from brainevent.doctor import jax_cuda_plugin_without_gpu

    if hint := jax_cuda_plugin_without_gpu():
        print_fn(f"note: {hint}; the demo runs on the CPU")
        jax.config.update("jax_platforms", "cpu")  # before JAX starts its backends: no traceback
    try:
        platform = "gpu" if any(d.platform == "gpu" for d in jax.devices()) else "cpu"
    except RuntimeError:  # no backend JAX can start
        platform = "cpu"
    print_fn(f"brainevent {brainevent.__version__}, JAX {jax.__version__}, running on: {platform}")
    started = time.perf_counter()
    if platform == "gpu":
        mod = brainevent.load_cuda_inline(name="brainevent_demo_gpu", cuda_sources=GPU_DEMO)
    else:
        mod = brainevent.load_cpp_inline(name="brainevent_demo", cpp_sources=CPU_DEMO)
    elapsed = time.perf_counter() - started
    how = "compiled" if mod.built_now else "loaded from cache"
    print_fn(f"{how} module {mod.name!r} in {elapsed * 1000:.1f} ms: {mod.path}")
    print_fn(f"targets: {', '.join(mod.target_names)}  spec: {mod.specs['saxpy']}")

    n = 1 << 16
    x = jnp.linspace(0.0, 1.0, n, dtype=jnp.float32)
    y = jnp.ones(n, dtype=jnp.float32)

    @jax.jit
    def step(x: jax.Array, y: jax.Array) -> jax.Array:
        return mod.saxpy(x, y, alpha=2.5)

    result = np.asarray(step(x, y))
    expected = 2.5 * np.asarray(x) + np.asarray(y)
    ok = np.allclose(result, expected, rtol=1e-6)
    print_fn(f"saxpy under jax.jit on {n} elements: first values {result[:3]}, matches NumPy: {ok}")
    return 0 if ok else 1
