"""Scratch memory on the GPU: CUB's DeviceReduce::Sum with its temporary storage from XLA's
allocator, sized by a host query exported from the same module; under jit, inside a
fori_loop, and (from XLA's own dump) inside a CUDA graph.

The nvcc test builds the module without a GPU; the gpu tests run it.
"""

from __future__ import annotations

import ctypes
import json
from pathlib import Path

import numpy as np
import pytest

import brainevent

# cub_sum_scratch_bytes is no entry point: a plain exported C function that asks CUB how many
# bytes it needs (a query with a null pointer launches nothing), called through ctypes.
SOURCE = r"""
#include <cub/device/device_reduce.cuh>
#include "brainevent/common.h"

extern "C" __attribute__((visibility("default"))) int64_t cub_sum_scratch_bytes(int64_t n) {
  size_t bytes = 0;
  cub::DeviceReduce::Sum(nullptr, bytes, static_cast<const float*>(nullptr), static_cast<float*>(nullptr),
                         static_cast<int>(n));
  return static_cast<int64_t>(bytes);
}

void cub_sum(const BE::Tensor x, BE::Tensor out, BE::Scratch work, cudaStream_t stream) {
  const int n = x.numel_checked_int();
  size_t needed = 0;
  BE_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, needed, x.data<float>(), out.data<float>(), n, stream));
  BE_CHECK(work.size_bytes() >= needed) << "CUB needs " << needed << " bytes of scratch, got "
                                        << work.size_bytes();
  size_t bytes = work.size_bytes();
  BE_CUDA_CHECK(cub::DeviceReduce::Sum(work.data(), bytes, x.data<float>(), out.data<float>(), n, stream));
}
"""


def scratch_query(mod) -> ctypes._CFuncPtr:  # type: ignore[no-untyped-def,name-defined]
    query = ctypes.CDLL(str(mod.path)).cub_sum_scratch_bytes
    query.restype, query.argtypes = ctypes.c_int64, [ctypes.c_int64]
    return query


@pytest.mark.nvcc
def test_cub_module_with_scratch_builds_and_exports_its_query() -> None:
    mod = brainevent.load_cuda_inline(
        "scratch_cub_build", SOURCE, functions=["cub_sum"], compute_capability="sm_80", auto_register=False
    )
    assert mod.specs == {"cub_sum": ["arg", "ret", "scratch", "stream"]}
    assert scratch_query(mod) is not None  # exported: the host can size the scratch


@pytest.fixture(scope="module")
def cub_mod():  # type: ignore[no-untyped-def]
    return brainevent.load_cuda_inline("scratch_cub", SOURCE, functions=["cub_sum"])


@pytest.mark.gpu
@pytest.mark.nvcc
def test_cub_sum_with_scratch_under_jit_matches_numpy(cub_mod) -> None:  # type: ignore[no-untyped-def]
    import jax
    import jax.numpy as jnp

    query = scratch_query(cub_mod)
    x = np.random.default_rng(1).standard_normal(1 << 20).astype(np.float32)
    assert query(x.size) > 0
    out = jax.ShapeDtypeStruct((1,), jnp.float32)

    @jax.jit
    def total(v):  # type: ignore[no-untyped-def]
        return cub_mod.cub_sum(v, outs=out, scratch_bytes=lambda a: query(a.size))

    got = float(np.asarray(total(jnp.asarray(x)))[0])
    np.testing.assert_allclose(got, float(x.astype(np.float64).sum()), rtol=1e-4, atol=1e-2)


@pytest.mark.gpu
@pytest.mark.nvcc
def test_cub_sum_with_scratch_in_a_fori_loop_matches_numpy(cub_mod) -> None:  # type: ignore[no-untyped-def]
    import jax
    import jax.numpy as jnp

    nbytes = scratch_query(cub_mod)(4096)
    x = np.arange(4096, dtype=np.float32) / 4096
    out = jax.ShapeDtypeStruct((1,), jnp.float32)

    @jax.jit
    def looped(v):  # type: ignore[no-untyped-def]
        def body(i, acc):  # type: ignore[no-untyped-def]
            scale = (i + 1).astype(jnp.float32)
            return acc + cub_mod.cub_sum(v * scale, outs=out, scratch_bytes=nbytes)

        return jax.lax.fori_loop(0, 10, body, jnp.zeros(1, jnp.float32))

    got = float(np.asarray(looped(jnp.asarray(x)))[0])
    np.testing.assert_allclose(got, float(x.astype(np.float64).sum()) * 55, rtol=1e-4)


@pytest.mark.gpu
@pytest.mark.nvcc
def test_too_small_scratch_is_reported(cub_mod) -> None:  # type: ignore[no-untyped-def]
    import jax
    import jax.numpy as jnp

    x = jnp.ones(1 << 16, jnp.float32)
    with pytest.raises(jax.errors.JaxRuntimeError, match=r"CUB needs \d+ bytes of scratch, got 1"):
        jax.block_until_ready(
            cub_mod.cub_sum(x, outs=jax.ShapeDtypeStruct((1,), jnp.float32), scratch_bytes=1)
        )


# In a fresh process (XLA reads its flags once): the loop's reduction, from XLA's dump.
LOOP_SCRIPT = r"""
import json, sys, ctypes
import brainevent, jax, jax.numpy as jnp, numpy as np
config = json.loads(sys.argv[1])
mod = brainevent.load_cuda_inline("scratch_cub", config["source"], functions=["cub_sum"])
query = ctypes.CDLL(str(mod.path)).cub_sum_scratch_bytes
query.restype, query.argtypes = ctypes.c_int64, [ctypes.c_int64]
nbytes = query(4096)
out = jax.ShapeDtypeStruct((1,), jnp.float32)

def looped_sum(v):
    body = lambda i, acc: acc + mod.cub_sum(v + i.astype(jnp.float32), outs=out, scratch_bytes=nbytes)
    return jax.lax.fori_loop(0, 8, body, jnp.zeros(1, jnp.float32))

x = np.ones(4096, np.float32)
got = float(np.asarray(jax.jit(looped_sum)(jnp.asarray(x)))[0])
assert abs(got - sum(4096 * (1 + i) for i in range(8))) < 1.0, got
print("ran")
"""


@pytest.mark.gpu
@pytest.mark.nvcc
def test_cub_sum_with_scratch_is_captured_in_a_cuda_graph(tmp_path: Path) -> None:
    from tests.support.xla_dumps import custom_call_placement, run_dumping

    out = run_dumping(LOOP_SCRIPT, [json.dumps({"source": SOURCE})], tmp_path / "dump", "looped_sum")
    assert "ran" in out
    placement = custom_call_placement(tmp_path / "dump", "jit_looped_sum")
    assert placement.inside >= 1, placement
