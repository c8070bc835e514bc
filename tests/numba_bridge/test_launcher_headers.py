"""The launcher libraries built from brainevent/*_launcher.h compile with the host compiler and
answer through ctypes without a GPU; launching on a GPU is covered by the gpu-marked tests."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

from brainevent.launchers import cubin as cubin_launcher
from brainevent.launchers.launcher import int64s
from brainevent.toolchain.cuda_driver import probe_devices

pytestmark = pytest.mark.host


@pytest.fixture
def private_launchers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if not probe_devices().devices:
        monkeypatch.setenv("BRAINEVENT_CUDA_ARCH", "sm_90")  # without a GPU the arch must be named
    monkeypatch.setenv("BRAINEVENT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cubin_launcher._launchers, "_launchers", {})  # build them here, not in another test


def _has_driver() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def test_cubin_launcher_builds_and_keeps_a_table(private_launchers: None) -> None:
    launcher = cubin_launcher.launcher_for(1, 1)
    assert launcher.target.startswith("brainevent_cubin_1i_1o.launch")
    lib = launcher.library
    params = int64s([cubin_launcher.OPERAND, 0, 16, cubin_launcher.OPERAND, 1, 16])
    assert lib.be_cubin_register(9, b"k", int64s([1, 1, 1, 32, 1, 1]), 0, 2, params, 2, int64s([]), 0) == 0
    assert lib.be_cubin_register(9, b"k", int64s([1, 1, 1, 32, 1, 1]), 0, 2, params, 2, int64s([]), 0) == 1
    lib.be_cubin_add_image(9, 90, b"not a cubin", 11, 0)
    if _has_driver():
        assert lib.be_cubin_preload(12345) == b"unknown kernel id"
    else:  # without a driver there is no active context to preload into: a launch reports it
        assert lib.be_cubin_preload(9) == b""
