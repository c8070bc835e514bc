"""The CUDA path without a GPU: real nvcc builds, checked with cuobjdump."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

import brainevent
from brainevent import SpecError, ToolchainError
from tests.support.kernels import CUDA_VECTOR_ADD_CHECKED as VECTOR_ADD

pytestmark = pytest.mark.nvcc


def _code(artifact: Path) -> set[str]:
    from brainevent.toolchain.fatbin import fatbin_entries

    return {f"{e.kind}:{e.arch}" for e in fatbin_entries(artifact)}


def test_single_arch_build_without_gpu(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="brainevent"):
        mod = brainevent.load_cuda_inline(
            name="cu_single", cuda_sources=VECTOR_ADD, compute_capability="sm_80"
        )
    assert mod.platform == "cuda" and mod.path.is_file()
    assert mod.specs == {"vector_add": ["arg", "arg", "ret", "stream"]}
    assert mod.target_names == ["cu_single.vector_add"]
    if not mod.registered:  # CPU-only JAX: nothing registered, and we were told why
        assert "not registered" in caplog.text
    assert _code(mod.path) == {"sass:80", "ptx:80"}


def test_fat_binary_with_ptx_for_the_highest_arch() -> None:
    mod = brainevent.load_cuda_inline(
        name="cu_fat",
        cuda_sources=VECTOR_ADD,
        compute_capability=["sm_80", "9.0"],
        auto_register=False,
    )
    # SASS for both archs, PTX only for the highest (forward compatibility).
    assert _code(mod.path) == {"sass:80", "sass:90", "ptx:90"}


def test_optimization_level_and_fast_math_are_in_the_key() -> None:
    paths = set()
    for level, fast in [(3, False), (0, False), (3, True)]:
        mod = brainevent.load_cuda_inline(
            name="cu_flags",
            cuda_sources=VECTOR_ADD,
            compute_capability="sm_80",
            auto_register=False,
            optimization_level=level,
            use_fast_math=fast,
        )
        assert mod.built_now
        paths.add(mod.path)
    assert len(paths) == 3
    again = brainevent.load_cuda_inline(
        name="cu_flags",
        cuda_sources=VECTOR_ADD,
        compute_capability="sm_80",
        auto_register=False,
        optimization_level=0,
    )
    assert not again.built_now
    # allow_cuda_graph is registration-only: no rebuild.
    graphless = brainevent.load_cuda_inline(
        name="cu_flags",
        cuda_sources=VECTOR_ADD,
        compute_capability="sm_80",
        auto_register=False,
        allow_cuda_graph=False,
    )
    assert not graphless.built_now


@pytest.mark.parametrize("level", [-1, 4, "3", 2.0, True])
def test_optimization_level_is_validated(level: object) -> None:
    with pytest.raises(SpecError, match=r"optimization_level=.* expected an int 0, 1, 2 or 3"):
        brainevent.load_cuda_inline(name="cu_bad_level", cuda_sources=VECTOR_ADD, optimization_level=level)  # type: ignore[arg-type]


def test_no_gpu_and_no_pin_explains_how_to_pin(monkeypatch: pytest.MonkeyPatch) -> None:
    from brainevent.toolchain.cuda_driver import probe_devices

    if probe_devices().devices:
        pytest.skip("not applicable: a GPU is present")
    monkeypatch.delenv("BRAINEVENT_CUDA_ARCH", raising=False)
    with pytest.raises(ToolchainError, match=r'compute_capability="sm_90".*BRAINEVENT_CUDA_ARCH'):
        brainevent.load_cuda_inline(name="cu_nopin", cuda_sources=VECTOR_ADD)


def test_env_pin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAINEVENT_CUDA_ARCH", "sm_75")
    mod = brainevent.load_cuda_inline(name="cu_envpin", cuda_sources=VECTOR_ADD, auto_register=False)
    assert _code(mod.path) == {"sass:75", "ptx:75"}


def test_compile_error_points_at_cuda_line() -> None:
    broken = VECTOR_ADD.replace("if (idx < n)", "if (idx < missing_n)")
    with pytest.raises(brainevent.CompileError) as info:
        brainevent.load_cuda_inline(name="cu_broken", cuda_sources=broken, compute_capability="sm_80")
    first = str(info.value).splitlines()[0]
    assert "cu_broken.cu(7)" in first and "missing_n" in first


THREE_FILES = {
    "common_math.cuh": "#pragma once\n__device__ inline float twice(float x) { return 2.0f * x; }\n",
    "a.cu": (
        '#include <cuda_runtime.h>\n#include "brainevent/common.h"\n#include "common_math.cuh"\n'
        "__global__ void k_a(float* o, int n) { int i = threadIdx.x; if (i < n) o[i] = twice(1.0f); }\n"
        "// @BE fill_a ret stream\nvoid fill_a(BE::Tensor out, int64_t stream) {\n"
        "  k_a<<<1, 256, 0, (cudaStream_t)stream>>>(out.data_ptr<float>(), (int)out.numel());\n}\n"
    ),
    "b.cu": (
        '#include <cuda_runtime.h>\n#include "brainevent/common.h"\n#include "common_math.cuh"\n'
        "__global__ void k_b(float* o, int n) { int i = threadIdx.x; if (i < n) o[i] = twice(2.0f); }\n"
        "// @BE fill_b ret stream\nvoid fill_b(BE::Tensor out, int64_t stream) {\n"
        "  k_b<<<1, 256, 0, (cudaStream_t)stream>>>(out.data_ptr<float>(), (int)out.numel());\n}\n"
    ),
    "c.cu": (
        '#include <cuda_runtime.h>\n#include "brainevent/common.h"\n'
        "__global__ void k_c(float* o, int n) { int i = threadIdx.x; if (i < n) o[i] = 7.0f; }\n"
        "// @BE fill_c ret stream\nvoid fill_c(BE::Tensor out, int64_t stream) {\n"
        "  k_c<<<1, 256, 0, (cudaStream_t)stream>>>(out.data_ptr<float>(), (int)out.numel());\n}\n"
    ),
}


def _write_dir(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in THREE_FILES.items():
        (root / name).write_text(text)
    return root


def test_load_cuda_dir_parallel_objects_and_incremental(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    src = _write_dir(tmp_path / "kernels")
    mod = brainevent.load_cuda_dir(src, compute_capability="sm_80", auto_register=False, ninja_workers=2)
    assert sorted(mod.functions) == ["fill_a", "fill_b", "fill_c"]
    assert mod.name == "kernels"
    # Editing one file rebuilds that object (and the link); the other objects are reused.
    (src / "c.cu").write_text(THREE_FILES["c.cu"].replace("7.0f", "8.0f"))
    with caplog.at_level(logging.INFO, logger="brainevent"):
        again = brainevent.load_cuda_dir(src, compute_capability="sm_80", auto_register=False)
    assert again.built_now and again.path != mod.path
    assert "2 object(s) reused" in caplog.text  # a.cu and b.cu (the shared decoder is fetched apart)
    # Editing the shared header rebuilds the two units that include it.
    caplog.clear()
    (src / "common_math.cuh").write_text(THREE_FILES["common_math.cuh"].replace("2.0f", "3.0f"))
    with caplog.at_level(logging.INFO, logger="brainevent"):
        third = brainevent.load_cuda_dir(src, compute_capability="sm_80", auto_register=False)
    assert third.built_now and "1 object(s) reused" in caplog.text  # c.cu


def test_wrapper_script_nvcc_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from brainevent.toolchain.nvcc import find_nvcc

    real = find_nvcc().path
    wrapper_dir = tmp_path / "bin"
    wrapper_dir.mkdir()
    (wrapper_dir / "nvcc").write_text(f'#!/bin/sh\nexec {real} "$@"\n')
    (wrapper_dir / "nvcc").chmod(0o755)
    for var in ("CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX", "BRAINEVENT_NVCC"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(
        "PATH", f"{wrapper_dir}:{Path(shutil.which('g++') or '/usr/bin/g++').parent}:/usr/bin:/bin"
    )
    found = find_nvcc(default_roots=[], pathfinder=False)
    assert found.path == real and found.found_via == "PATH"
