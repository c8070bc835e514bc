"""The CUDA driver probe: no driver here, plus real stub libraries built with the host
compiler that answer like a driver with no device, with GPUs, or with a failure."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from brainevent import config
from brainevent.toolchain import cuda_driver
from brainevent.toolchain.cuda_driver import DeviceInfo, DriverProbe, probe_devices

_STUB_SOURCE = r"""
#include <stdio.h>
#define EXPORT __attribute__((visibility("default")))
static const int majors[] = {%(majors)s};
static const int minors[] = {%(minors)s};
EXPORT int cuInit(unsigned int flags) { (void)flags; return %(init)d; }
EXPORT int cuDriverGetVersion(int* v) { *v = 13000; return 0; }
EXPORT int cuDeviceGetCount(int* n) { *n = %(count)d; return 0; }
EXPORT int cuDeviceGet(int* d, int ordinal) { *d = ordinal; return 0; }
EXPORT int cuDeviceGetAttribute(int* v, int attr, int dev) {
  if (%(attr_fails)d) return 1;
  if (attr == 75) { *v = majors[dev]; return 0; }
  if (attr == 76) { *v = minors[dev]; return 0; }
  return 1;
}
EXPORT int cuDeviceGetName(char* name, int len, int dev) {
  snprintf(name, (size_t)len, "Stub GPU %%d", dev);
  return 0;
}
"""


def _c_compiler() -> str | None:
    for name in ("cc", "gcc", "clang", "g++", "c++"):
        found = shutil.which(name)
        if found:
            return found
    return None


def build_stub(
    directory: Path,
    *,
    init_result: int,
    devices: tuple[tuple[int, int], ...] = (),
    attr_fails: bool = False,
) -> str:
    """Compile a tiny shared library exporting the driver entry points we call.

    It has no ``libcuda.so.1`` soname, so a later ``dlopen("libcuda.so.1")`` can never
    pick it up by mistake.
    """
    compiler = _c_compiler()
    if compiler is None:
        if config.REQUIRE_ALL_TESTS.get():
            pytest.fail("no C compiler to build the driver stub")
        pytest.skip("no C compiler to build the driver stub")
    pad = devices or ((0, 0),)
    source = _STUB_SOURCE % {
        "majors": ", ".join(str(m) for m, _ in pad),
        "minors": ", ".join(str(n) for _, n in pad),
        "init": init_result,
        "count": len(devices),
        "attr_fails": int(attr_fails),
    }
    src = directory / "stub.c"
    src.write_text(source)
    lib = directory / f"libstubdriver_{init_result}_{len(devices)}_{int(attr_fails)}.so"
    subprocess.run(
        [compiler, "-x", "c", "-shared", "-fPIC", "-o", str(lib), str(src)],
        check=True,
        capture_output=True,
    )
    return str(lib)


@pytest.fixture(autouse=True)
def _fresh_probe() -> Iterator[None]:
    cuda_driver.clear_probe_cache()
    yield
    cuda_driver.clear_probe_cache()


def _has_real_driver() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def test_no_driver_here_is_reported_not_raised() -> None:
    # How fast the probe fails is measured by benchmarks/bench_timing.py.
    if _has_real_driver():
        pytest.skip("not applicable: this machine has an NVIDIA driver")
    probe = probe_devices()
    assert probe == DriverProbe(
        available=False,
        reason=("no NVIDIA driver (libcuda.so.1) is installed: this looks like a machine without a GPU"),
        seconds=probe.seconds,
    )
    assert probe.devices == () and probe.driver_version is None
    assert "without a GPU" in probe.reason


def test_probe_is_memoized_and_clearable() -> None:
    first = probe_devices()
    assert probe_devices() is first
    cuda_driver.clear_probe_cache()
    assert probe_devices() is not first
    assert probe_devices() == probe_devices()


def test_missing_library_path_is_reported(tmp_path: Path) -> None:
    probe = probe_devices(str(tmp_path / "libnothing.so"))
    assert not probe.available
    assert probe.reason.startswith("cannot load the driver library")


def test_library_without_entry_points(tmp_path: Path) -> None:
    # A real shared library that is not a driver: libc has no cuInit.
    libc = "libc.so.6" if sys.platform.startswith("linux") else None
    if libc is None:
        pytest.skip("not applicable: Linux only")
    probe = probe_devices(libc)
    assert not probe.available
    assert "cuInit" in probe.reason


@pytest.mark.host
def test_no_device_names_cuda_visible_devices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = build_stub(tmp_path, init_result=100)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    probe = probe_devices(lib)
    assert not probe.available
    assert probe.reason == "no CUDA device is visible (CUDA_VISIBLE_DEVICES='')"
    cuda_driver.clear_probe_cache()
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert probe_devices(lib).reason == ("no CUDA device is visible (CUDA_VISIBLE_DEVICES is unset)")


@pytest.mark.host
def test_init_failure_code_is_reported(tmp_path: Path) -> None:
    probe = probe_devices(build_stub(tmp_path, init_result=34))
    assert not probe.available
    assert probe.reason.startswith("the NVIDIA driver failed to initialise (CUresult 34")
    assert "stub" in probe.reason
    cuda_driver.clear_probe_cache()
    other = probe_devices(build_stub(tmp_path, init_result=7))
    assert other.reason == "the NVIDIA driver failed to initialise (CUresult 7)"


@pytest.mark.host
def test_devices_are_read(tmp_path: Path) -> None:
    lib = build_stub(tmp_path, init_result=0, devices=((9, 0), (8, 6)))
    probe = probe_devices(lib)
    assert probe.available, probe.reason
    assert probe.driver_version == 13000
    assert probe.devices == (
        DeviceInfo(0, "Stub GPU 0", 9, 0),
        DeviceInfo(1, "Stub GPU 1", 8, 6),
    )
    assert probe.devices[0].compute_capability == (9, 0)
    assert probe.reason == ""


@pytest.mark.host
def test_zero_devices_after_init(tmp_path: Path) -> None:
    probe = probe_devices(build_stub(tmp_path, init_result=0, devices=()))
    assert not probe.available
    assert probe.driver_version == 13000
    assert "no CUDA device is visible" in probe.reason


@pytest.mark.host
def test_query_failure_is_reported(tmp_path: Path) -> None:
    probe = probe_devices(build_stub(tmp_path, init_result=0, devices=((9, 0),), attr_fails=True))
    assert not probe.available
    assert "cuDeviceGetAttribute failed (CUresult 1)" in probe.reason


def test_probe_in_a_fresh_process_agrees_with_this_one() -> None:
    # The import and the probe are harmless in a bare interpreter, and a fresh process
    # (nothing of JAX or brainevent loaded) sees the same driver and devices as this one.
    src = Path(__file__).resolve().parents[2] / "src"
    code = (
        "import json, sys; from brainevent.toolchain.cuda_driver import probe_devices;"
        "p = probe_devices(); print(json.dumps([p.available, p.reason, p.driver_version,"
        " [[d.ordinal, d.name, d.major, d.minor] for d in p.devices]]));"
        "print(sorted(m for m in ('jax', 'jaxlib', 'numba') if m in sys.modules))"
    )
    env = dict(os.environ, PYTHONPATH=str(src))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    here = probe_devices()
    expected = [
        here.available,
        here.reason,
        here.driver_version,
        [[d.ordinal, d.name, d.major, d.minor] for d in here.devices],
    ]
    result, imported = proc.stdout.splitlines()
    assert json.loads(result) == expected
    assert imported == "[]"  # the probe needs neither JAX nor Numba


@pytest.mark.gpu
def test_real_gpu_is_described() -> None:
    probe = probe_devices()
    if not probe.available:
        if config.REQUIRE_ALL_TESTS.get():
            pytest.fail(f"no GPU: {probe.reason}")
        pytest.skip(f"no GPU: {probe.reason}")
    assert probe.driver_version is not None and probe.driver_version >= 11000
    assert [d.ordinal for d in probe.devices] == list(range(len(probe.devices)))
    for device in probe.devices:
        assert device.name and 3 <= device.major < 30 and 0 <= device.minor <= 9
