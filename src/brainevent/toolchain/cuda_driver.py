"""Ask the NVIDIA driver (``libcuda.so.1`` through ``ctypes``: no JAX, no toolkit) which GPUs are
visible and their compute capability. :func:`probe_devices` never raises: without a GPU it says why.
``cuInit`` ties the process to the driver: like JAX, do not ``fork`` and use CUDA after it."""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import logging
import os
import sys
import time
from dataclasses import dataclass

logger = logging.getLogger(__name__)

# The driver library name per platform: only the versioned soname is always present.
_DRIVER_LIBRARY: str = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"

_ATTR_CC_MAJOR, _ATTR_CC_MINOR = 75, 76  # CUdevice_attribute values, unchanged from CUDA 12 to 13
_CUDA_SUCCESS, _CUDA_ERROR_NO_DEVICE = 0, 100

# Names for the CUresult codes a probe may plausibly meet, with a hint each.
_CURESULT_HINTS: dict[int, str] = {
    3: "CUDA_ERROR_NOT_INITIALIZED",
    34: "CUDA_ERROR_STUB_LIBRARY: the loaded libcuda is the toolkit's stub, not a real driver",
    35: "CUDA_ERROR_INSUFFICIENT_DRIVER: the installed driver is older than needed",
    304: "CUDA_ERROR_OPERATING_SYSTEM",
    999: "CUDA_ERROR_UNKNOWN: often a driver/kernel-module mismatch; a reboot may help",
}


@dataclass(frozen=True)
class DeviceInfo:
    """One GPU as the driver numbers it (after ``CUDA_VISIBLE_DEVICES``)."""

    ordinal: int
    name: str
    major: int
    minor: int

    @property
    def compute_capability(self) -> tuple[int, int]:
        return (self.major, self.minor)


@dataclass(frozen=True)
class DriverProbe:
    """What the driver said. ``reason`` explains ``available=False`` in plain words."""

    available: bool
    driver_version: int | None = None  # e.g. 13000 for a CUDA 13.0 driver
    devices: tuple[DeviceInfo, ...] = ()
    reason: str = ""
    seconds: float = 0.0


def _describe(code: int) -> str:
    hint = _CURESULT_HINTS.get(code)
    return f"CUresult {code}, {hint}" if hint else f"CUresult {code}"


def _call(lib: ctypes.CDLL, name: str, *args: object) -> None:
    code = getattr(lib, name)(*args)
    if code != _CUDA_SUCCESS:
        raise RuntimeError(f"{name} failed ({_describe(code)})")  # the probe's reason


def _query(lib: ctypes.CDLL) -> tuple[int | None, tuple[DeviceInfo, ...]]:
    version, count = ctypes.c_int(0), ctypes.c_int(0)
    known = lib.cuDriverGetVersion(ctypes.byref(version)) == _CUDA_SUCCESS
    _call(lib, "cuDeviceGetCount", ctypes.byref(count))
    devices = []
    for ordinal in range(count.value):
        handle, major, minor = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(0)  # CUdevice is an int
        _call(lib, "cuDeviceGet", ctypes.byref(handle), ordinal)
        _call(lib, "cuDeviceGetAttribute", ctypes.byref(major), _ATTR_CC_MAJOR, handle)
        _call(lib, "cuDeviceGetAttribute", ctypes.byref(minor), _ATTR_CC_MINOR, handle)
        name = ctypes.create_string_buffer(256)
        _call(lib, "cuDeviceGetName", name, len(name), handle)
        devices.append(DeviceInfo(ordinal, name.value.decode("utf-8", "replace"), major.value, minor.value))
    return (version.value if known else None), tuple(devices)


def _probe(library: str) -> DriverProbe:
    try:
        lib = ctypes.CDLL(library)
    except OSError as exc:
        logger.debug("cannot load %s: %s", library, exc)
        if library == _DRIVER_LIBRARY:
            reason = f"no NVIDIA driver ({library}) is installed: this looks like a machine without a GPU"
        else:
            reason = f"cannot load the driver library {library!r}: {exc}"
        return DriverProbe(False, reason=reason)

    try:
        code = lib.cuInit(0)
        if code not in (_CUDA_SUCCESS, _CUDA_ERROR_NO_DEVICE):
            return DriverProbe(False, reason=f"the NVIDIA driver failed to initialise ({_describe(code)})")
        driver_version, devices = _query(lib) if code == _CUDA_SUCCESS else (None, ())
    except (RuntimeError, AttributeError) as exc:
        # AttributeError: a library without one of the entry points is not a driver.
        return DriverProbe(False, reason=f"the NVIDIA driver query failed: {exc}")
    if not devices:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        note = "CUDA_VISIBLE_DEVICES is unset" if visible is None else f"CUDA_VISIBLE_DEVICES={visible!r}"
        reason = f"no CUDA device is visible ({note})"
        return DriverProbe(False, driver_version=driver_version, reason=reason)
    return DriverProbe(True, driver_version=driver_version, devices=devices)


@functools.cache
def probe_devices(library: str = _DRIVER_LIBRARY) -> DriverProbe:
    """Probe the driver once per process (per ``library``, for tests: the path of another
    shared library to use as the driver); never raises."""
    start = time.perf_counter()
    try:
        result = _probe(library)
    except Exception as exc:  # a probe must never take the caller down
        logger.debug("driver probe failed unexpectedly", exc_info=True)
        result = DriverProbe(False, reason=f"the driver probe failed: {exc!r}")
    result = dataclasses.replace(result, seconds=time.perf_counter() - start)
    logger.debug("driver probe of %s: %s", library, result)
    return result


clear_probe_cache = probe_devices.cache_clear  # forget earlier probes (the driver keeps its cuInit)
