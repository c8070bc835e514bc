"""The process-wide record of FFI targets this library registered with JAX.

XLA's CPU registry refuses a second handler under a name and its CUDA registry
silently keeps the first, so a target is registered once per process. When a
changed module is loaded again under the same name, the first module's handler
(the one XLA holds) is pointed at the new code through its exported forwarding
pointer.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from dataclasses import dataclass

from ..errors import RegistrationError

log = logging.getLogger("brainevent.runtime")


@dataclass
class _Registered:
    library: ctypes.CDLL
    function: str
    platform: str
    artifact_key: str


_lock = threading.Lock()
_targets: dict[str, _Registered] = {}


def _symbol_address(library: ctypes.CDLL, symbol: str) -> int:
    return ctypes.cast(getattr(library, symbol), ctypes.c_void_p).value or 0


def register_target(
    target: str,
    library: ctypes.CDLL,
    function: str,
    *,
    platform: str,
    artifact_key: str,
    command_buffer: bool,
) -> str:
    """Registers (or re-points) ``target``; returns "registered", "unchanged" or "reloaded"."""
    from ..codegen.binding import forward_symbol, handler_symbol, impl_symbol

    with _lock:
        existing = _targets.get(target)
        if existing is not None and existing.platform == platform:
            if existing.artifact_key == artifact_key:
                return "unchanged"
            # The slot of the handler XLA holds now points at the new code's non-forwarding
            # entry (or back to nothing, when the original code returns).
            new_impl = _symbol_address(library, impl_symbol(function))
            own_impl = _symbol_address(existing.library, impl_symbol(existing.function))
            slot = ctypes.c_void_p.in_dll(existing.library, forward_symbol(existing.function))
            slot.value = None if new_impl == own_impl else new_impl
            _targets[target] = _Registered(existing.library, existing.function, platform, artifact_key)
            # Keep the new library alive: the old handler now calls into it.
            _keepalive.append(library)
            log.info("target %s now runs the reloaded module (%s)", target, artifact_key[:12])
            return "reloaded"

        import jax.ffi

        handler = getattr(library, handler_symbol(function, command_buffer=command_buffer))
        try:
            jax.ffi.register_ffi_target(target, jax.ffi.pycapsule(handler), platform=platform, api_version=1)
        except Exception as exc:  # XLA reports clashes as assorted runtime errors
            raise RegistrationError(
                f"could not register FFI target {target!r} on platform {platform!r}: {exc}. "
                "Another library may already use that name; pass target_prefix= to pick another.",
                target=target,
                platform=platform,
            ) from exc
        _targets[target] = _Registered(library, function, platform, artifact_key)
        return "registered"


_keepalive: list[ctypes.CDLL] = []


def registered_targets() -> dict[str, str]:
    """{target: platform} of everything registered through brainevent in this process."""
    with _lock:
        return {name: reg.platform for name, reg in _targets.items()}
