"""What a cache hit costs a user: no build machinery is imported (it loads on a miss), no
toolchain is searched for and no process is started. A CUDA hit (compile-only: the arch is
given, no GPU needed) neither searches for nvcc nor imports anything under brainevent.toolchain
beyond the host compiler's lookup and the memo that remembers what keys a build."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC_DIR = str(Path(__file__).resolve().parents[2] / "src")

KERNEL = r"""
#include "brainevent/common.h"
// @BE hit_twice arg ret
void hit_twice(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = 2.0f * x.data_ptr<float>()[i];
}
"""

CUDA_KERNEL = r"""
#include "brainevent/common.h"
__global__ void twice(const float* x, float* y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
// @BE hit_twice arg ret stream
void hit_twice(const BE::Tensor x, BE::Tensor out, cudaStream_t stream) {
    int64_t n = x.numel();
    twice<<<(n + 255) / 256, 256, 0, stream>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
}
"""

PROBE = textwrap.dedent(
    """
    import json, sys
    import jax, numpy as np
    import brainevent
    jax.devices()  # a program has JAX's backends up before its first load
    before = set(sys.modules)
    started = []  # every process the load starts, as Python's audit events name it
    sys.addaudithook(lambda event, args: started.append(event) if event in (
        "subprocess.Popen", "os.system", "os.posix_spawn", "os.spawn", "os.exec", "os.fork") else None)
    if sys.argv[2].startswith("cuda"):  # "cuda": compile-only, for the arch given; "cuda-gpu": as
        arch = "sm_80" if sys.argv[2] == "cuda" else None  # users call it, the archs JAX's GPUs'
        mod = brainevent.load_cuda_inline(
            name="hit_imports_cu", cuda_sources=sys.argv[1], compute_capability=arch
        )
    else:
        mod = brainevent.load_cpp_inline(name="hit_imports", cpp_sources=sys.argv[1])
    ran = list(started)
    loaded = sorted(m for m in set(sys.modules) - before if m.startswith("brainevent"))
    if sys.argv[2] == "cpu":
        y = mod.hit_twice(np.arange(4, dtype=np.float32))
        assert np.allclose(np.asarray(y), [0, 2, 4, 6]), y
    print(json.dumps({"built_now": mod.built_now, "loaded": loaded, "started": ran}))
    """
)

# Modules only a build (or a bundle, or a distributed job) needs.
BUILD_ONLY = (
    "brainevent.spec.resolve",
    "brainevent.spec.signature",
    "brainevent.codegen",
    "brainevent.stages.plan",
    "brainevent.stages.execute",
    "brainevent.stages.decoder",
    "brainevent.build",
    "brainevent.platforms.steps",
    "brainevent.platforms.languages",
    "brainevent.cache.publish",
    "brainevent.distributed",
    "brainevent.bundle",
    "brainevent.cache.bundle",
    "brainevent.logs",
)
# Under brainevent.toolchain a hit needs the host compiler's lookup (every key names it) and
# the memo of nvcc's search: no search, no version probe, no arch table.
TOOLCHAIN_ON_A_HIT = ("brainevent.toolchain", "brainevent.toolchain.host", "brainevent.toolchain.memo")
# Modules a call (or reading CompiledModule.path or .functions) needs, and a load does not:
# registering takes the function names alone, the specs are read back on first use.
CALL_ONLY = (
    "brainevent.spec",
    "brainevent.vocabulary",
    "brainevent.runtime.kernel_function",
    "brainevent.runtime.attrs",
    "brainevent.runtime.artifact_path",
)


def _load(cache: Path, platform: str, **variables: str) -> dict[str, object]:
    env = dict(os.environ, BRAINEVENT_CACHE_DIR=str(cache), **variables)
    if platform != "cuda-gpu":
        env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = SRC_DIR + os.pathsep + env.get("PYTHONPATH", "")
    kernel = CUDA_KERNEL if platform.startswith("cuda") else KERNEL
    done = subprocess.run(
        [sys.executable, "-c", PROBE, kernel, platform], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "platform",
    [
        "cpu",
        pytest.param("cuda", marks=pytest.mark.nvcc),
        pytest.param("cuda-gpu", marks=[pytest.mark.nvcc, pytest.mark.gpu]),
    ],
)
def test_a_cache_hit_imports_no_build_machinery_and_starts_no_process(tmp_path: Path, platform: str) -> None:
    miss = _load(tmp_path, platform)
    assert miss["built_now"] is True
    assert "brainevent.stages.plan" in miss["loaded"]  # the probe sees what a build imports
    assert miss["started"], "the probe sees the compiler's process"
    if platform.startswith("cuda"):  # the probe sees nvcc's search
        assert "brainevent.toolchain.nvcc" in miss["loaded"]

    hit = _load(tmp_path, platform)  # a fresh process, as a program's first load
    assert hit["built_now"] is False
    assert hit["started"] == []
    imported = set(hit["loaded"])  # type: ignore[arg-type]
    assert "brainevent.stages.load" in imported  # the hit did load and register
    assert sorted(m for m in imported if m.startswith(BUILD_ONLY)) == []
    assert sorted(m for m in imported if m.startswith(CALL_ONLY)) == []
    toolchain = {m for m in imported if m.startswith("brainevent.toolchain")}
    assert sorted(toolchain - set(TOOLCHAIN_ON_A_HIT)) == []
