"""The platforms a module can be built for: one module each, registered here by name.

A new platform is a module with a subclass of :class:`~.base.Platform` plus a row of the
platform table (platform_table.py). Platform modules are imported on first use.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from ..platform_table import BUILD_PLATFORMS, HOST_PLATFORM

if TYPE_CHECKING:  # the platform modules (and what they import) load on first use
    from .base import Platform

_classes: dict[str, type[Platform]] = {}


def platform_class(name: str) -> type[Platform]:
    """The class of platform ``name`` (a manifest's or CompiledModule's ``platform``)."""
    found = _classes.get(name)
    if found is None:
        module, _, attribute = BUILD_PLATFORMS[name].platform_class.partition(":")
        found = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
        _classes[name] = found
    return found


def create(name: str, **options: Any) -> Platform:
    """A platform object for one load (it may search for its toolchain)."""
    return platform_class(name)(**options)


def jax_spellings() -> dict[str, str]:
    """{accepted spelling (lower case): JAX platform name} over every platform."""
    return {s: p.ffi_platform for p in BUILD_PLATFORMS.values() for s in p.ffi_spellings}


def running_platforms() -> set[str] | None:
    """The platforms of this process's JAX backends ("cpu", "cuda"), or None before JAX has started
    them; never imports JAX."""
    bridge = sys.modules.get("jax._src.xla_bridge")
    try:
        if bridge is not None and bridge.backends_are_initialized():
            return {b.platform for b in bridge.backends().values()}
    except (AttributeError, RuntimeError):  # a backend that failed to start is JAX's to report
        pass
    return None


__all__ = ["HOST_PLATFORM", "create", "jax_spellings", "platform_class", "running_platforms"]
