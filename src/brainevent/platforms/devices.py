"""The device platforms kernels run on, described once.

Users name a platform many ways ("gpu", "cuda", "rocm"; JAX lowers for "cuda" or "rocm";
a compiled module's build platform is "cuda"). Inside the library a device platform has one
name, the first column here; every other list (the spellings ``XLACustomKernel`` and
``config.set_backend`` accept, JAX's lowering platforms, the build platform and backend name
of compiled functions, ``register_ffi_target``'s spellings) is read from this table. Pure
data: ``config`` imports it at ``import brainevent``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DevicePlatform:
    name: str  # the one name used inside the library (and by XLACustomKernel's tables)
    spellings: tuple[str, ...]  # what users may write for it (the name first)
    jax_platforms: tuple[str, ...]  # the platform names JAX lowers for
    build_platform: str | None = None  # the platform modules are compiled for (platforms/)
    compiled_backend: str | None = None  # the backend name of a compiled module function


DEVICE_PLATFORMS: tuple[DevicePlatform, ...] = (
    DevicePlatform("cpu", ("cpu",), ("cpu",), build_platform="cpu", compiled_backend="cpp"),
    DevicePlatform(
        "gpu", ("gpu", "cuda", "rocm"), ("cuda", "rocm"), build_platform="cuda", compiled_backend="cuda_raw"
    ),
    DevicePlatform("tpu", ("tpu",), ("tpu",)),
)

BY_NAME = {p.name: p for p in DEVICE_PLATFORMS}
# Any spelling -> the one name.
SPELLINGS = {spelling: p.name for p in DEVICE_PLATFORMS for spelling in p.spellings}
# JAX's lowering platform -> the one name.
OF_JAX_PLATFORM = {jax: p.name for p in DEVICE_PLATFORMS for jax in p.jax_platforms}
# A build platform (a compiled module's) -> the one name.
OF_BUILD_PLATFORM = {p.build_platform: p.name for p in DEVICE_PLATFORMS if p.build_platform}
