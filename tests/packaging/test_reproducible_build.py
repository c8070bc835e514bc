"""Reproducible builds: the same sources, flags and toolchain give byte-identical artifacts.

Each test builds one module twice from scratch, into two different cache roots (so
the staging directories, object caches and absolute paths differ), and compares the
shared objects' sha256. The precompile path (``brainevent build`` in a fresh process)
is checked the same way.

Debug builds are covered too: compile commands map the (random) staging directory to
``.`` in debug information, and nvcc keeps its intermediates under names derived from
the unit instead of ``tmpxft_<pid>_...``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

import brainevent

CPP_SOURCE = r"""
#include "brainevent/common.h"

// @BE add_scaled arg arg ret attr.alpha:float32
void add_scaled(const BE::Tensor x, const BE::Tensor y, BE::Tensor out, float alpha) {
    const float* px = x.data_ptr<float>();
    const float* py = y.data_ptr<float>();
    float* po = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) po[i] = px[i] + alpha * py[i];
}
"""

CUDA_SOURCE = r"""
#include "brainevent/common.h"

__global__ void add_scaled_kernel(const float* x, const float* y, float* out, float alpha, int64_t n) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = x[i] + alpha * y[i];
}

// @BE add_scaled arg arg ret attr.alpha:float32 stream
void add_scaled(const BE::Tensor x, const BE::Tensor y, BE::Tensor out, float alpha, int64_t stream) {
    int64_t n = x.numel();
    add_scaled_kernel<<<(n + 255) / 256, 256, 0, reinterpret_cast<cudaStream_t>(stream)>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), alpha, n);
    BE_CHECK_KERNEL_LAUNCH();
}
"""


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_twice(tmp_path: Path, build: object) -> tuple[Path, Path]:
    paths = []
    for run in ("first", "second"):
        module = build(str(tmp_path / run / "cache"))  # type: ignore[operator]
        assert module.built_now, "expected a fresh build"
        paths.append(Path(module.path))
    assert paths[0] != paths[1]
    return paths[0], paths[1]


def assert_identical(a: Path, b: Path) -> None:
    assert sha256(a) == sha256(b), (
        f"two clean builds differ:\n  {a}\n  {b}\n"
        "Compare them with `cmp -l`, `strings -a` and `readelf -n` to see what was embedded."
    )


@pytest.mark.parametrize("optimization_level", [3, 0])
def test_cpp_inline_builds_are_byte_identical(tmp_path: Path, gxx: str, optimization_level: int) -> None:
    a, b = build_twice(
        tmp_path,
        lambda root: brainevent.load_cpp_inline(
            "repro_cpp",
            CPP_SOURCE,
            build_directory=root,
            auto_register=False,
            optimization_level=optimization_level,
        ),
    )
    assert_identical(a, b)


@pytest.mark.nvcc
def test_cuda_inline_builds_are_byte_identical(tmp_path: Path) -> None:
    a, b = build_twice(
        tmp_path,
        lambda root: brainevent.load_cuda_inline(
            "repro_cuda",
            CUDA_SOURCE,
            build_directory=root,
            auto_register=False,
            compute_capability="sm_80",
        ),
    )
    assert_identical(a, b)


@pytest.mark.nvcc
def test_cuda_unstripped_builds_are_byte_identical(tmp_path: Path) -> None:
    a, b = build_twice(
        tmp_path,
        lambda root: brainevent.load_cuda_inline(
            "repro_cuda_o0",
            CUDA_SOURCE,
            build_directory=root,
            auto_register=False,
            compute_capability="sm_80",
            optimization_level=0,
        ),
    )
    assert_identical(a, b)


def test_cpp_debug_builds_are_byte_identical(tmp_path: Path, gxx: str) -> None:
    a, b = build_twice(
        tmp_path,
        lambda root: brainevent.load_cpp_inline(
            "repro_cpp_debug",
            CPP_SOURCE,
            build_directory=root,
            auto_register=False,
            extra_cflags=["-g"],
        ),
    )
    assert_identical(a, b)


def test_precompiled_artifacts_are_byte_identical(tmp_path: Path, gxx: str) -> None:
    """`brainevent build FILE --cache-dir DIR`, in two processes with different working dirs."""
    kernel = tmp_path / "kernels" / "repro_cli.cpp"
    kernel.parent.mkdir()
    kernel.write_text(CPP_SOURCE)
    env = dict(os.environ)
    src = Path(__file__).resolve().parents[2] / "src"
    if (src / "brainevent").is_dir():  # a checkout: run its code, as the tests do
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH")]))
    artifacts = []
    for run in ("first", "second"):
        workdir = tmp_path / run
        workdir.mkdir()
        cache = workdir / "cache"
        proc = subprocess.run(
            [sys.executable, "-m", "brainevent", "build", str(kernel), "--cache-dir", str(cache)],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        found = sorted(cache.rglob("librepro_cli.*.so"))
        assert len(found) == 1, f"expected one artifact under {cache}, found {found}\n{proc.stdout}"
        artifacts.append(found[0])
    assert_identical(*artifacts)
