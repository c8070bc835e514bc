"""The compute-sanitizer recipe of docs/troubleshooting.md finds a one-element overrun.

Each case is a fresh process, run as the page writes it: XLA's stream-ordered allocator, no
preallocation, `compute-sanitizer --tool memcheck python script.py`. The kernel writes one
element past its 1024-float result; the report must name the kernel (and, for a debug module
build, its source line) and the 4,096-byte allocation it missed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")

MODULE = r'''
import jax, numpy as np, brainevent
SRC = """
#include "brainevent/common.h"
__global__ void w_kernel(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n + 1) out[i] = x[i % n];
}
void w(const BE::Tensor x, BE::Tensor out, cudaStream_t stream) {
  int n = x.numel();
  w_kernel<<<(n + 256) / 256, 256, 0, stream>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
}
"""
mod = brainevent.load_cuda_inline(name="overrun", cuda_sources=SRC,
    functions={"w": ["arg", "ret", "stream"]}, debug=True)
x = np.ones(1024, np.float32)
jax.jit(lambda x: mod.w(x, outs=jax.ShapeDtypeStruct(x.shape, x.dtype)))(x).block_until_ready()
'''

CUDA_KERNEL = r'''
import jax, numpy as np, brainevent
SRC = """extern "C" __global__ void w(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n + 1) out[i] = x[i % n];
}"""
x = np.ones(1024, np.float32)
f = brainevent.cuda_kernel(SRC, "w", jax.ShapeDtypeStruct(x.shape, x.dtype),
    launch_dims=lambda x: x.size + 1, n=lambda x: x.size)
jax.jit(f)(x).block_until_ready()
'''


def _compute_sanitizer() -> str | None:
    for directory in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if directory and (Path(directory) / "bin" / "compute-sanitizer").is_file():
            return str(Path(directory) / "bin" / "compute-sanitizer")
    return shutil.which("compute-sanitizer")


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("script", "where"),
    [(MODULE, "w_kernel(const float *, float *, int)"), (CUDA_KERNEL, "at w+")],
    ids=["load_cuda_inline-debug", "cuda_kernel"],
)
def test_the_recipe_reports_a_one_element_overrun(script: str, where: str, tmp_path: Path) -> None:
    sanitizer = _compute_sanitizer()
    if sanitizer is None:
        pytest.skip("compute-sanitizer is not installed")
    if script is MODULE and shutil.which("nvcc") is None and not os.environ.get("CUDA_HOME"):
        pytest.skip("load_cuda_inline needs nvcc")
    (tmp_path / "script.py").write_text(textwrap.dedent(script))
    env = dict(
        os.environ,
        PYTHONPATH=SRC,
        BRAINEVENT_CACHE_DIR=str(tmp_path / "cache"),
        XLA_PYTHON_CLIENT_ALLOCATOR="cuda_async",
        XLA_PYTHON_CLIENT_PREALLOCATE="false",
    )
    done = subprocess.run(
        [sanitizer, "--tool", "memcheck", sys.executable, "script.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = done.stdout + done.stderr
    assert "Invalid __global__ write of size 4 bytes" in report, report[-3000:]
    assert where in report, report[-3000:]
    assert "of size 4,096 bytes" in report, report[-3000:]
    if script is MODULE:
        assert ".cu:4" in report, report[-3000:]  # the debug build's source line
    assert "ERROR SUMMARY: 0 errors" not in report
