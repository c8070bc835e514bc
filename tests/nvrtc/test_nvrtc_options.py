"""cuda_kernel as the module loaders behave: BRAINEVENT_CUDA_ARCH picks the architectures when
compute_capability is not given, debug= (or BRAINEVENT_DEBUG) compiles with -G -lineinfo as its
own cache entry, ``brainevent.nvrtc`` is reachable after ``import brainevent`` (loaded on first
use), and an NVRTC CompileError names the source and the log file, as a module's does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest

import brainevent
from brainevent.errors import CompileError, KernelCallError

from .kernels import VECTOR_ADD

pytestmark = pytest.mark.host  # lowering builds the cubin launcher with the host compiler
SPEC = jax.ShapeDtypeStruct((4096,), np.float32)
SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture(autouse=True)
def _nvrtc() -> None:
    from brainevent.errors import ToolchainError
    from brainevent.nvrtc.process import nvrtc_info

    try:
        nvrtc_info()
    except ToolchainError as exc:
        pytest.skip(f"needs libnvrtc (pip install nvidia-cuda-nvrtc): {exc}")


def _compiled(monkeypatch: pytest.MonkeyPatch, **kw: Any) -> list[Any]:
    """The requests (source, arch) that lowering a vector add compiles."""
    from brainevent.nvrtc import cache

    seen: list[Any] = []
    original = cache.compile_cached

    def spy(request: Any, **options: Any) -> Any:
        seen.append(request)
        return original(request, **options)

    monkeypatch.setattr(cache, "compile_cached", spy)
    add = brainevent.cuda_kernel(VECTOR_ADD, "add", SPEC, launch_dims=4096, n=4096, **kw)
    jax.jit(add).trace(SPEC, SPEC).lower(lowering_platforms=("cuda",))
    return seen


def test_brainevent_cuda_arch_picks_the_architectures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAINEVENT_CUDA_ARCH", "sm_80,9.0")
    assert sorted(r.arch for r in _compiled(monkeypatch)) == ["sm_80", "sm_90"]
    assert [r.arch for r in _compiled(monkeypatch, compute_capability="sm_86")] == ["sm_86"]  # given wins


def test_debug_compiles_with_device_debug_information(monkeypatch: pytest.MonkeyPatch) -> None:
    from brainevent.nvrtc.cache import key_of

    monkeypatch.setenv("BRAINEVENT_CUDA_ARCH", "sm_80")
    (release,) = _compiled(monkeypatch)
    (debug,) = _compiled(monkeypatch, debug=True)
    assert "-G" not in release.source.options and {"-G", "-lineinfo"} <= set(debug.source.options)
    assert key_of(debug) != key_of(release)  # both stay cached
    monkeypatch.setenv("BRAINEVENT_DEBUG", "1")
    (from_env,) = _compiled(monkeypatch)
    assert key_of(from_env) == key_of(debug)
    (explicit,) = _compiled(monkeypatch, debug=False)
    assert key_of(explicit) == key_of(release)
    code = brainevent.nvrtc.compile(VECTOR_ADD, "add", "sm_80", options=debug.source.options).code
    assert b".debug_info" in code
    assert b".debug_info" not in brainevent.nvrtc.compile(VECTOR_ADD, "add", "sm_80").code
    with pytest.raises(KernelCallError, match=r"debug must be True, False or None, got 'yes'"):
        brainevent.cuda_kernel(VECTOR_ADD, "add", SPEC, launch_dims=4096, n=4096, debug="yes")


def test_brainevent_nvrtc_is_reachable_after_import_brainevent() -> None:
    code = (
        "import sys, brainevent\n"
        "assert 'brainevent.nvrtc' not in sys.modules\n"
        "assert brainevent.nvrtc.compile.__module__ == 'brainevent.nvrtc'\n"
        "assert not any(m.split('.')[0] in ('jax', 'numpy') for m in sys.modules), 'heavy imports'\n"
    )
    env = {"PYTHONPATH": SRC}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_compile_error_names_the_source_and_its_log_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.cu"
    broken.write_text('extern "C" __global__ void k(float* o) {\n  o[0] = undefined_name;\n}\n')
    with pytest.raises(CompileError) as caught:
        brainevent.nvrtc.compile(broken, "k", "sm_80", build_directory=str(tmp_path / "cache"))
    error = caught.value
    assert error.module == str(broken.resolve()) and error.log_path is not None
    assert "undefined_name" in Path(error.log_path).read_text() and error.log_path in str(error)
    assert "undefined_name" in error.compiler_output
