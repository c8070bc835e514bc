"""The platforms a module can be built for: one module each, registered here by name.

A new platform is a module with a class that follows :class:`~.protocol.Platform` plus one line
in ``_REGISTRY``. Platform modules are imported on first use, so naming one costs nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the platform modules (and what they import) load on first use
    from .protocol import Platform

# name -> "module:class", relative to this package.
_REGISTRY: dict[str, str] = {
    "cpu": "cpu:CpuPlatform",
    "cuda": "cuda:CudaPlatform",
}
_classes: dict[str, type[Platform]] = {}

# The platform of code that runs in the calling process (the default of a KernelFunction).
HOST_PLATFORM = "cpu"


def platform_class(name: str) -> type[Platform]:
    """The class of platform ``name`` (a manifest's or CompiledModule's ``platform``)."""
    found = _classes.get(name)
    if found is None:
        module, _, attribute = _REGISTRY[name].partition(":")
        found = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
        _classes[name] = found
    return found


def create(name: str, **options: Any) -> Platform:
    """A platform object for one load (it may search for its toolchain)."""
    return platform_class(name)(**options)


def names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def jax_spellings() -> dict[str, str]:
    """{accepted spelling (lower case): JAX platform name} over every platform."""
    return {
        spelling: cls.jax_platform for cls in map(platform_class, _REGISTRY) for spelling in cls.spellings
    }


__all__ = ["HOST_PLATFORM", "create", "jax_spellings", "names", "platform_class"]
