"""The cache-hit path imports only what a hit needs: the build machinery loads on a miss, the
call sugar on the first call, and the classes a hit creates are plain (docs/architecture.md).
A CUDA hit (compile-only: the arch is given, no GPU needed) neither searches for nvcc nor
imports anything under brainevent.toolchain beyond the host compiler's lookup and the memo."""

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
    import dataclasses, json, sys
    import jax, numpy as np
    import brainevent
    jax.devices()  # a program has JAX's backends up before its first load
    before = set(sys.modules)
    if sys.argv[2] == "cuda":  # compile-only: built for the arch given, registered where a GPU is
        mod = brainevent.load_cuda_inline(
            name="hit_imports_cu", cuda_sources=sys.argv[1], compute_capability="sm_80"
        )
    else:
        mod = brainevent.load_cpp_inline(name="hit_imports", cpp_sources=sys.argv[1])
    loaded = sorted(m for m in set(sys.modules) - before if m.startswith("brainevent"))
    costly = sorted(  # classes that cost several times a plain class to create
        f"{name}.{cls.__name__}"
        for name in loaded
        for cls in vars(sys.modules[name]).values()
        if isinstance(cls, type) and cls.__module__ == name
        and (hasattr(cls, "_fields") and issubclass(cls, tuple) or dataclasses.is_dataclass(cls)
             or getattr(cls, "_is_protocol", False))
    )
    if sys.argv[2] == "cpu":
        y = mod.hit_twice(np.arange(4, dtype=np.float32))
        assert np.allclose(np.asarray(y), [0, 2, 4, 6]), y
    print(json.dumps({"built_now": mod.built_now, "loaded": loaded, "costly": costly}))
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
    env = dict(os.environ, BRAINEVENT_CACHE_DIR=str(cache), JAX_PLATFORMS="cpu", **variables)
    env["PYTHONPATH"] = SRC_DIR + os.pathsep + env.get("PYTHONPATH", "")
    kernel = CUDA_KERNEL if platform == "cuda" else KERNEL
    done = subprocess.run(
        [sys.executable, "-c", PROBE, kernel, platform], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("platform", ["cpu", pytest.param("cuda", marks=pytest.mark.nvcc)])
def test_a_cache_hit_imports_no_build_machinery(tmp_path: Path, platform: str) -> None:
    miss = _load(tmp_path, platform)
    assert miss["built_now"] is True
    assert "brainevent.stages.plan" in miss["loaded"]  # the probe sees what a build imports
    if platform == "cuda":  # the probe sees nvcc's search
        assert "brainevent.toolchain.nvcc" in miss["loaded"]

    # A variable the digest of a call covers (and the key does not): the full hit path, not a recall.
    hit = _load(tmp_path, platform, BRAINEVENT_LOCK_TIMEOUT="123")
    assert hit["built_now"] is False
    assert "brainevent.stages.key" in hit["loaded"]
    imported = set(hit["loaded"])  # type: ignore[arg-type]
    assert sorted(m for m in imported if m.startswith(BUILD_ONLY)) == []
    assert sorted(m for m in imported if m.startswith(CALL_ONLY)) == []
    toolchain = {m for m in imported if m.startswith("brainevent.toolchain")}
    assert sorted(toolchain - set(TOOLCHAIN_ON_A_HIT)) == []
    assert "brainevent.stages.recall" in imported  # the hit did load and register
    # The records a hit creates are plain classes (brainevent.records): no NamedTuple,
    # dataclass or Protocol is created by the modules it imports.
    assert hit["costly"] == []


# What a recalled load (stages/recall.py) does without: the request, the options, the key and
# the platform with its toolchain, and the store with its manifest (the record is sealed).
NOT_ON_A_RECALL = (
    "brainevent.load_options",
    "brainevent.stages.request",
    "brainevent.stages.key",
    "brainevent.stages.load",
    "brainevent.platforms.cpu",
    "brainevent.platforms.base",
    "brainevent.toolchain",
    "brainevent.cache.key",
    "brainevent.cache.manifest",
    "brainevent.cache.store",
)
# All that a recall imports after `import brainevent`: each module costs a first load ~0.15-0.3 ms.
ON_A_RECALL = {
    "brainevent.loaders",
    "brainevent.stages",
    "brainevent.stages.recall",
    "brainevent.cache",  # the layout and the sealed record
    "brainevent.cache.trust",
    "brainevent.cache.records",  # the one schema check of the record's function rows
    "brainevent.environment",  # the variables the call's digest covers, one table
    "brainevent.fileio",
    "brainevent.headers",
    "brainevent.runtime",
    "brainevent.runtime.module",
    "brainevent.runtime.registry",
}


def test_a_recalled_load_imports_only_the_record_checks_and_registration(tmp_path: Path) -> None:
    assert _load(tmp_path, "cpu")["built_now"] is True
    recalled = _load(tmp_path, "cpu")  # the same call in the same environment
    assert recalled["built_now"] is False
    imported = set(recalled["loaded"])  # type: ignore[arg-type]
    assert sorted(m for m in imported if m.startswith(NOT_ON_A_RECALL)) == []
    assert sorted(m for m in imported if m.startswith(BUILD_ONLY + CALL_ONLY)) == []
    assert imported == ON_A_RECALL, sorted(imported ^ ON_A_RECALL)
    assert recalled["costly"] == []
