"""The launcher libraries built from brainevent/*_launcher.h compile with the host compiler and
answer through ctypes without a GPU; launching on a GPU is covered by the gpu-marked tests."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

from brainevent.launchers import cubin as cubin_launcher
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
    params = [cubin_launcher.Param(cubin_launcher.OPERAND, i, 16) for i in (0, 1)]
    image = {90: cubin_launcher.Image(b"not a cubin", 0)}
    blob = cubin_launcher.kernel_blob("k", (1, 1, 1), (32, 1, 1), params, 2, image)
    first = lib.be_cubin_register_blob(9, blob, len(blob))  # kept, then loaded into active contexts
    assert lib.be_cubin_register_blob(9, blob, len(blob)) == b""  # the same id: kept as it is
    malformed = lib.be_cubin_register_blob(10, blob[:-1], len(blob) - 1)
    assert malformed == b"the kernel attribute is malformed (its counts do not match its size)"
    if _has_driver():
        lib.be_cubin_preload.restype = ctypes.c_char_p
        assert lib.be_cubin_preload(10) == b"unknown kernel id"  # the malformed one was not kept
    else:  # without a driver there is no active context to load into: a launch reports it
        assert first == b""
