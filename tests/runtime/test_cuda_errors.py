"""What a CUDA host launcher throws becomes a Python error; the process and the module survive.

The trampoline nvcc compiles has no try/catch: an exception unwinds through it to the shared
decoder (built by the host compiler, linked into the same library), which words it. The nvcc
test builds the module and checks the trampolines' shape without a GPU; the gpu tests run it.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import brainevent

SOURCE = r"""
#include <stdexcept>
#include <cuda_runtime.h>
#include "brainevent/common.h"

__global__ void copy_kernel(const float* x, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i];
}

// @BE copy_checked arg ret attr.limit:int32 stream
void copy_checked(const BE::Tensor x, BE::Tensor out, int32_t limit, cudaStream_t stream) {
  BE_CHECK(x.numel() <= limit) << "too many elements: " << x.numel() << " > " << limit;
  const int n = x.numel_checked_int();
  copy_kernel<<<(n + 255) / 256, 256, 0, stream>>>(x.data<float>(), out.data<float>(), n);
}

namespace ops {
// @BE throws_std arg ret
void throws_std(const BE::Tensor x, BE::Tensor out) {
  throw std::runtime_error("launcher gave up on " + std::to_string(x.numel()) + " elements");
}
}  // namespace ops

// @BE throws_int arg ret
static void throws_int(const BE::Tensor x, BE::Tensor out) {
  if (x.numel() > 0) throw 7;
}
"""


@pytest.fixture(scope="module")
def mod() -> brainevent.CompiledModule:
    return brainevent.load_cuda_inline(name="cuda_errors", cuda_sources=SOURCE)


@pytest.mark.nvcc
def test_trampolines_have_no_try_catch(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("BRAINEVENT_CACHE_DIR", str(tmp_path))
    built = brainevent.load_cuda_inline(
        name="cuda_errors", cuda_sources=SOURCE, compute_capability="sm_80", auto_register=False
    )
    unit = next(built.path.parent.glob("src/k0_*.cu")).read_text()
    entry_points = unit[unit.index('#line 1 "<brainevent entry points>"') :]
    assert "be_entry_throws_int" in entry_points and not re.search(r"\btry\b|\bcatch\b", entry_points)
    assert "::ops::throws_std(t[0], t[1]);" in entry_points


def _call(name: str, x: np.ndarray, **attrs: object) -> np.ndarray:
    import jax
    import jax.numpy as jnp

    out = jax.ffi.ffi_call(f"cuda_errors.{name}", jax.ShapeDtypeStruct(x.shape, jnp.float32))(
        jnp.asarray(x), **attrs
    )
    return np.asarray(out)


@pytest.mark.gpu
@pytest.mark.nvcc
def test_launcher_exceptions_become_python_errors(mod: brainevent.CompiledModule) -> None:
    import jax

    x = np.arange(8, dtype=np.float32)
    with pytest.raises(jax.errors.JaxRuntimeError, match=r"check failed: .*too many elements: 8 > 3"):
        _call("copy_checked", x, limit=3)
    with pytest.raises(
        jax.errors.JaxRuntimeError,
        match=r"cuda_errors\.throws_std \(cuda_errors\.cu:\d+\): uncaught C\+\+ exception: "
        r"launcher gave up on 8",
    ):
        _call("throws_std", x)
    with pytest.raises(jax.errors.JaxRuntimeError, match=r"uncaught C\+\+ exception of unknown type"):
        _call("throws_int", x)
    # Nothing was left half-done: the same module still runs its kernel.
    np.testing.assert_array_equal(_call("copy_checked", x, limit=100), x)
