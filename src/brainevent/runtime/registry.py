"""The process-wide record of FFI targets this library registered with JAX.

A target is registered once per process; a changed module loaded again re-points the first
handler through its forwarding slot, and a different module claiming a registered target is
refused unless ``replace=True``. Every target is registered as batch partitionable too
(calls/batching.py). docs/architecture.md, "Registration and live reload".
"""

from __future__ import annotations

import ctypes
import logging
import threading
from collections.abc import Mapping
from typing import Any

from ..errors import RegistrationError
from ..headers import forward_symbol, handler_symbol, impl_symbol

log = logging.getLogger("brainevent.runtime")


class _Registered:
    """A registered target (a plain class: the first cache hit imports this module)."""

    __slots__ = ("artifact_key", "function", "library", "module", "running")

    def __init__(
        self, library: ctypes.CDLL, function: str, artifact_key: str, module: str, running: ctypes.CDLL
    ) -> None:
        self.library = library  # the library whose handler XLA holds
        self.function = function
        self.artifact_key = artifact_key
        self.module = module  # the module that owns the target now
        self.running = running  # the library whose code calls run (``library``, or the one it forwards to)


_lock = threading.Lock()
# Keyed by (target, platform): XLA keeps one registry per platform, so a CPU and a CUDA
# module may share a target name (one source, two builds).
_targets: dict[tuple[str, str], _Registered] = {}
_keepalive: list[ctypes.CDLL] = []


def _symbol_address(library: ctypes.CDLL, symbol: str) -> int:
    return ctypes.cast(getattr(library, symbol), ctypes.c_void_p).value or 0


def _check_owners(targets: Mapping[str, str], module: str, platform: str) -> None:
    """RegistrationError if another module owns any of ``targets`` ({function: target})."""
    taken = {
        target: _targets[(target, platform)].module
        for target in targets.values()
        if (target, platform) in _targets and _targets[(target, platform)].module != module
    }
    if not taken:
        return
    owners = sorted(set(taken.values()))
    names = sorted(taken)
    what = f"FFI target {names[0]!r}" if len(names) == 1 else f"FFI targets {names}"
    by = " and ".join(repr(o) for o in owners)
    message = (
        f"module {module!r} cannot register {what} on platform {platform!r}: already registered to "
        f"different module {by}, and taking over would make code "
        f"written for {by} silently run {module!r}. Pass another target_prefix= (or name=) when "
        f"loading {module!r}, or replace=True to point the target(s) at {module!r} on purpose."
    )
    owner = owners[0] if len(owners) == 1 else owners
    raise RegistrationError(
        message, target=names[0], targets=names, platform=platform, module=module, registered_by=owner
    )


def register_targets(
    targets: Mapping[str, str],
    library: ctypes.CDLL,
    *,
    module: str,
    platform: str,
    artifact_key: str,
    command_buffer: bool,
    graph_capture: bool,
    replace: bool = False,
) -> dict[str, str]:
    """Registers (or re-points) each ``{function: target}`` of one library; returns
    ``{target: "registered" | "unchanged" | "reloaded"}``. Nothing is registered when any
    target belongs to another module and ``replace`` is False.

    Compiled executables are dropped after a re-point only where one may hold a captured graph
    of the old handler (``graph_capture``, the platform's, and ``command_buffer``).
    """
    with _lock:
        if not replace:
            _check_owners(targets, module, platform)
        outcome = {
            target: _register_locked(
                target, library, function, module, platform, artifact_key, command_buffer
            )
            for function, target in targets.items()
        }
    reloaded = [target for target, what in outcome.items() if what == "reloaded"]
    if reloaded and graph_capture and command_buffer:
        _drop_compiled_executables(reloaded)
    return outcome


def _register_locked(
    target: str,
    library: ctypes.CDLL,
    function: str,
    module: str,
    platform: str,
    artifact_key: str,
    command_buffer: bool,
) -> str:
    existing = _targets.get((target, platform))
    if existing is not None:
        # The same bytes loaded from another path (another cache directory) are another
        # library instance, with static state of its own: calls keep running the instance
        # they ran (code holding state in it, e.g. a launcher's kernel table, stays valid);
        # running_library() names it for callers that need its state.
        if existing.artifact_key == artifact_key:
            existing.module = module
            return "unchanged"
        # The slot of the handler XLA holds now points at the new code's non-forwarding
        # entry (or back to nothing, when the original code returns).
        new_impl = _symbol_address(library, impl_symbol(function))
        own_impl = _symbol_address(existing.library, impl_symbol(existing.function))
        slot = ctypes.c_void_p.in_dll(existing.library, forward_symbol(existing.function))
        slot.value = None if new_impl == own_impl else new_impl
        _targets[(target, platform)] = _Registered(
            existing.library, existing.function, artifact_key, module, library
        )
        # Keep the new library alive: the old handler now calls into it.
        _keepalive.append(library)
        if existing.module != module:
            log.warning("target %s now runs module %s (it ran %s)", target, module, existing.module)
        else:
            log.info("target %s now runs the reloaded module (%s)", target, artifact_key[:12])
        return "reloaded"

    handler = getattr(library, handler_symbol(function, command_buffer=command_buffer))
    try:
        _register_with_jax(target, handler, platform)
    except Exception as exc:  # XLA reports clashes as assorted runtime errors
        raise RegistrationError(
            f"could not register FFI target {target!r} on platform {platform!r}: {exc}. "
            "Another library may already use that name; pass target_prefix= to pick another.",
            target=target,
            platform=platform,
        ) from exc
    _targets[(target, platform)] = _Registered(library, function, artifact_key, module, library)
    return "registered"


def _register_with_jax(
    target: str, handler: Any, platform: str, stages: tuple[str, ...] = ("execute",)
) -> None:
    import jax.ffi

    capsule = jax.ffi.pycapsule(handler)
    fn = capsule if stages == ("execute",) else dict.fromkeys(stages, capsule)
    jax.ffi.register_ffi_target(target, fn, platform=platform, api_version=1)
    jax.ffi.register_ffi_target_as_batch_partitionable(target)


def _drop_compiled_executables(targets: list[str]) -> None:
    # A CUDA graph captured before the re-point replays the old kernels without calling the
    # handler; JAX cannot drop only the executables that captured a target, so drop them all.
    import jax

    jax.clear_caches()
    log.info("cleared JAX's compiled executables so that calls of %s run the new code", ", ".join(targets))


def running_library(target: str, platform: str) -> ctypes.CDLL | None:
    """The library instance whose code runs when XLA calls ``target`` on ``platform``."""
    with _lock:
        found = _targets.get((target, platform))
        return None if found is None else found.running


_handlers: dict[str, tuple[int, str]] = {}  # launcher target -> (handler address, JAX platform)


def register_handler(
    target: str, library: ctypes.CDLL, symbol: str, platform: str, stages: tuple[str, ...] = ("execute",)
) -> str:
    """Registers ``library``'s handler ``symbol`` under ``target`` on JAX platform ``platform``
    for XLA's ``stages`` (a launcher's, not a module function's: nothing re-points it) and returns
    the name used.
    XLA keeps a name's first handler, so a rebuilt library (another cache) gets a name of its own."""
    handler = getattr(library, symbol)
    address = ctypes.cast(handler, ctypes.c_void_p).value or 0
    with _lock:
        chosen, n = target, 1
        while chosen in _handlers and _handlers[chosen][0] != address:
            n += 1
            chosen = f"{target}_{n}"
        if chosen not in _handlers:
            _register_with_jax(chosen, handler, platform, stages)
            _handlers[chosen] = (address, platform)
    return chosen


def registered_targets() -> dict[str, str]:
    """{target: platform} of everything registered through brainevent in this process.

    A name registered on both platforms is listed once, with its platforms joined by ", ".
    """
    with _lock:
        platforms: dict[str, list[str]] = {}
        handlers = [(name, platform) for name, (_, platform) in _handlers.items()]
        for name, platform in sorted([*_targets, *handlers]):
            platforms.setdefault(name, []).append(platform)
        return {name: ", ".join(found) for name, found in platforms.items()}
