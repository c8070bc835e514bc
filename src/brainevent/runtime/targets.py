"""Registering a loaded module's function under a name of the caller's choice, and listing
what is registered: ``register_ffi_target`` and ``list_registered_targets`` (0.2.1's names).

The loaders register ``"<name>.<function>"`` themselves; these are for a module loaded with
``auto_register=False`` or for a second name of one function.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

from ..errors import LoadError, RegistrationError
from ..fileio import sha256_file
from ..platforms import jax_spellings, platform_class
from .module import CompiledModule
from .registry import register_targets, registered_targets


def _error(target: str, message: str, **data: Any) -> RegistrationError:
    return RegistrationError(f"register_ffi_target({target!r}): {message}", target=target, **data)


def register_ffi_target(
    target_name: str,
    module: CompiledModule,
    func_name: str,
    *,
    platform: str | None = None,
    replace: bool = False,
    content_id: str | None = None,
    allow_cuda_graph: bool = True,
) -> None:
    """Register ``module``'s function ``func_name`` as the JAX FFI target ``target_name``.

    Afterwards ``jax.ffi.ffi_call(target_name, ...)`` runs it, under ``jax.jit`` or not.
    ``platform`` defaults to the module's own ("cpu" for C++ modules, "CUDA" for CUDA ones);
    naming the other one is an error. Registering the same library again is a no-op; a new
    build of the same module under a name it registered re-points that target to the new
    code (so a notebook can edit and reload); a name another module registered is a
    RegistrationError unless ``replace=True``. ``content_id`` identifies the library's
    content (default: a hash of the file).
    """
    if not isinstance(target_name, str) or not target_name.strip():
        raise RegistrationError(
            f"register_ffi_target(): target_name must be a non-empty string, got {target_name!r}",
            target=repr(target_name),
        )
    if not isinstance(module, CompiledModule):
        got = type(module).__name__
        raise _error(
            target_name, f"module must be a CompiledModule returned by a brainevent loader, got {got}"
        )
    if func_name not in module.functions:
        message = f"module {module.name!r} has no function {func_name!r}; it has {sorted(module.functions)}"
        raise _error(target_name, message, function=func_name)
    expected = platform_class(module.platform).jax_platform
    # JAX's name of the platform a caller spelled (0.2.1 took "cpu" and "CUDA"; the platform table
    # lists the spellings each accepts).
    spellings = jax_spellings()
    key = platform.lower() if isinstance(platform, str) else ""
    jax_platform = expected if platform is None else spellings.get(key)
    if jax_platform is None:
        names = sorted(set(spellings.values()), key=str.lower)
        others = sorted(s for s in spellings if s not in {n.lower() for n in names})
        raise _error(
            target_name,
            f"platform={platform!r} is not known; expected {' or '.join(map(repr, names))} "
            f"({' and '.join(map(repr, others))} are accepted too)",
            platform=platform,
        )
    if jax_platform != expected:
        raise _error(
            target_name,
            f"platform={platform!r}, but module {module.name!r} was built for {module.platform!r}; "
            f"drop platform= or load the module for {jax_platform}",
            platform=platform,
        )
    try:
        library = ctypes.CDLL(os.fspath(module.path), mode=ctypes.RTLD_LOCAL)
    except OSError as exc:
        message = f"register_ffi_target({target_name!r}): cannot load {module.path}: {exc}"
        raise LoadError(message, path=str(module.path)) from exc
    content = f"content:{content_id}" if content_id is not None else f"sha256:{sha256_file(module.path)}"
    register_targets(
        {func_name: target_name},
        library,
        module=module.name,
        platform=jax_platform,
        artifact_key=content,
        command_buffer=allow_cuda_graph,
        graph_capture=platform_class(module.platform).graph_capture,
        replace=replace,
    )


def list_registered_targets() -> list[str]:
    """The names of every FFI target brainevent registered in this process, sorted."""
    return sorted(registered_targets())


def export_checks() -> list[Any]:
    """The ``disabled_checks`` that let ``jax.export`` serialize code calling our kernels.

    JAX refuses to export a custom call whose target it does not know to be stable; our
    targets are stable as long as the same kernels are loaded where the export is run (a
    module loads its targets; a Numba or Triton kernel registers its own when first traced).
    ``jax.export.export(jax.jit(f), disabled_checks=brainevent.export_checks())(...)``.
    ``cuda_kernel`` calls are always listed (their target is fixed, their kernel travels with
    the program); for other kernels, call it after they are loaded or first traced.
    """
    from jax import export

    from ..launchers.cubin import EXPORT_TARGET

    targets = sorted({EXPORT_TARGET, *list_registered_targets()})
    return [export.DisabledSafetyCheck.custom_call(target) for target in targets]


def deserialize(serialized: bytes | bytearray) -> Any:
    """``jax.export.deserialize``, after registering the launcher that runs the program's
    ``cuda_kernel`` calls: their compiled kernels travel with the program, so this process needs
    neither their source nor a trace. Module functions still need their module loaded first."""
    from jax import export

    from ..launchers.cubin import EXPORT_TARGET, export_launcher

    if EXPORT_TARGET.encode() in serialized:  # only then build (or load) the launcher
        export_launcher()
    return export.deserialize(bytearray(serialized))
