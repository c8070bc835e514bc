"""A machine without compilers (a production node) loads modules built ahead of time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import brainevent

SRC = str(Path(__file__).resolve().parents[2] / "src")

CPP = r"""
#include "brainevent/common.h"
// @BE inc arg ret
void inc(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i] + 1.0f;
}
"""

CU = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"
__global__ void k(float* o, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) o[i] = 5.0f; }
// @BE fives ret stream
void fives(BE::Tensor out, int64_t stream) {
    int n = out.numel();
    k<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(out.data_ptr<float>(), n);
}
"""

NO_TOOLCHAIN_LOAD = r"""
import sys, brainevent, numpy as np, jax.numpy as jnp
kind, cache = sys.argv[1], sys.argv[2]
if kind == "cpp":
    mod = brainevent.load_cpp_inline(name="aot_cpp", cpp_sources=sys.argv[3], build_directory=cache)
    assert np.array_equal(np.asarray(mod.inc(jnp.zeros(3, jnp.float32))), np.ones(3))
else:
    mod = brainevent.load_cuda_inline(name="aot_cu", cuda_sources=sys.argv[3], build_directory=cache,
                                      compute_capability="sm_80", auto_register=False)
assert not mod.built_now
print("loaded", mod.path)
"""


def _without_compilers(tmp_path: Path) -> dict[str, str]:
    missing = str(tmp_path / "no-such-compiler")
    return dict(
        os.environ,
        PYTHONPATH=SRC,
        JAX_PLATFORMS="cpu",
        BRAINEVENT_CXX=missing,
        BRAINEVENT_NVCC=missing,
        PATH="/usr/bin/missing-only",
    )


def test_cpp_module_loads_without_a_host_compiler(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    brainevent.load_cpp_inline(name="aot_cpp", cpp_sources=CPP, build_directory=cache, auto_register=False)
    done = subprocess.run(
        [sys.executable, "-c", NO_TOOLCHAIN_LOAD, "cpp", cache, CPP],
        env=_without_compilers(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("loaded")


def test_unbuilt_module_without_a_compiler_explains(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", NO_TOOLCHAIN_LOAD, "cpp", str(tmp_path / "empty"), CPP],
        env=_without_compilers(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0
    assert "does not name an executable C++ compiler" in done.stderr
    assert "No ahead-of-time build of module 'aot_cpp'" in done.stderr


@pytest.mark.nvcc
def test_cuda_module_loads_without_nvcc(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    brainevent.load_cuda_inline(
        name="aot_cu", cuda_sources=CU, build_directory=cache, compute_capability="sm_80", auto_register=False
    )
    done = subprocess.run(
        [sys.executable, "-c", NO_TOOLCHAIN_LOAD, "cu", cache, CU],
        env=_without_compilers(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("loaded")


HEADER_LOAD = r"""
import sys, brainevent, numpy as np, jax.numpy as jnp
cache, src, inc = sys.argv[1], sys.argv[2], sys.argv[3]
mod = brainevent.load_cpp_inline(
    name="aot_hdr", cpp_sources=src, build_directory=cache, extra_include_paths=[inc]
)
print("value", float(np.asarray(mod.f(jnp.zeros(1, jnp.float32)))[0]))
"""

HEADER_CPP = r"""
#include "brainevent/common.h"
#include "val.h"
// @BE f arg ret
void f(const BE::Tensor x, BE::Tensor out) { out.data_ptr<float>()[0] = x.data_ptr<float>()[0] + VAL; }
"""


def test_prebuilt_module_whose_header_changed_is_refused_without_a_compiler(tmp_path: Path) -> None:
    """The ahead-of-time entry lists the headers it was built from; a node without compilers
    tells that one changed and says so instead of loading the stale library."""
    cache, inc = tmp_path / "cache", tmp_path / "inc"
    inc.mkdir()
    header = inc / "val.h"
    header.write_text("#define VAL 3\n")
    os.utime(header, (1_600_000_000, 1_600_000_000))  # long before the build
    brainevent.load_cpp_inline(
        name="aot_hdr",
        cpp_sources=HEADER_CPP,
        build_directory=str(cache),
        extra_include_paths=[str(inc)],
        auto_register=False,
    )

    def load() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", HEADER_LOAD, str(cache), HEADER_CPP, str(inc)],
            env=_without_compilers(tmp_path),
            capture_output=True,
            text=True,
            timeout=300,
        )

    done = load()
    assert done.returncode == 0, done.stderr[-3000:]
    assert "value 3.0" in done.stdout
    header.write_text("#define VAL 9\n")
    done = load()
    assert done.returncode != 0
    assert "ahead-of-time build of module 'aot_hdr'" in done.stderr
    assert f"{header} changed" in done.stderr
    assert "brainevent build" in done.stderr
