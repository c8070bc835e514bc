"""Building the compiled launcher libraries: a launcher header (``brainevent/<name>.h``) plus
one small XLA FFI entry per operand count (our arg_spec has a fixed arity). The loaders cache
each library by content (once per machine); this module keeps the loaded ones per process.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# restype, argtypes of each function a launcher library exports to Python.
CtypesApi = Mapping[str, tuple[Any, list[Any]]]
I64, P64 = ctypes.c_int64, ctypes.POINTER(ctypes.c_int64)


@dataclass(frozen=True)
class LauncherSpec:
    """One kind of launcher: its header, the FFI entry's name and the C++ function it calls."""

    header: str  # under brainevent/, e.g. "numba_cpu_launcher.h"
    library_prefix: str  # the module is named "<prefix>_<n>i_<m>o"
    function: str  # the FFI entry's name (its target is "<module>.<function>")
    core_call: str  # called as core_call(kernel_id, operands, count)
    api: CtypesApi
    # The XLA FFI handler the library exports, which reads the call frame itself: calls go to it
    # (target "<module>.<handler>"), or with handler_platform on that platform as "<module>.<function>".
    handler: str
    handler_platform: str | None = None
    load_options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Launcher:
    target: str
    library: ctypes.CDLL


def arity_entry(spec: LauncherSpec, n_inputs: int, n_outputs: int) -> str:
    """``void <function>(in..., out..., int64_t kernel_id)`` calling the core."""
    names = [f"in{i}" for i in range(n_inputs)] + [f"out{i}" for i in range(n_outputs)]
    tokens = " ".join(["arg"] * n_inputs + ["ret"] * n_outputs + ["attr.kernel_id:int64"])
    params = [f"{'const ' if i < n_inputs else ''}BE::Tensor {n}" for i, n in enumerate(names)]
    pointers = ", ".join(f"&{n}" for n in names)
    return (
        f'#include "brainevent/{spec.header}"\n'
        f"// @BE {spec.function} {tokens}\n"
        f"void {spec.function}({', '.join([*params, 'int64_t kernel_id'])}) {{\n"
        f"  const BE::Tensor* operands[] = {{{pointers}}};\n"
        f"  {spec.core_call}(kernel_id, operands, {len(names)});\n"
        "}\n"
    )


def build_launcher(spec: LauncherSpec, n_inputs: int, n_outputs: int) -> Launcher:
    name = f"{spec.library_prefix}_{n_inputs}i_{n_outputs}o"
    source = arity_entry(spec, n_inputs, n_outputs)
    from ..loaders import load_cpp_inline

    # Every launcher is built by the host compiler: GPU ones reach the driver through dlopen.
    module = load_cpp_inline(name=name, cpp_sources=[source], **spec.load_options)
    # The instance XLA calls: the same bytes loaded earlier from another cache directory
    # are another instance with its own kernel table, and stay the one that runs.
    from ..platforms import platform_class
    from ..runtime.registry import register_handler, running_library

    jax_platform = platform_class(module.platform).jax_platform
    running = running_library(module.targets[spec.function], jax_platform) if module.registered else None
    library = running or ctypes.CDLL(str(module.path), mode=ctypes.RTLD_LOCAL)
    for function, (restype, argtypes) in spec.api.items():
        getattr(library, function).restype, getattr(library, function).argtypes = restype, argtypes
    # On a platform where the library registers nothing, the handler takes the entry's name.
    target = f"{name}.{spec.handler if spec.handler_platform is None else spec.function}"
    return Launcher(
        register_handler(target, library, spec.handler, spec.handler_platform or jax_platform), library
    )


class LauncherCache:
    """The launchers of one spec by operand count, built on first use (``setup`` runs once on
    each new library, e.g. to hand it a callback)."""

    def __init__(self, spec: LauncherSpec, setup: Callable[[ctypes.CDLL], None] | None = None) -> None:
        self._spec = spec
        self._setup = setup
        self._lock = threading.Lock()
        self._launchers: dict[tuple[int, int], Launcher] = {}

    def get(self, n_inputs: int, n_outputs: int) -> Launcher:
        key = (n_inputs, n_outputs)
        with self._lock:
            found = self._launchers.get(key)
            if found is None:
                found = build_launcher(self._spec, n_inputs, n_outputs)
                if self._setup is not None:
                    self._setup(found.library)
                self._launchers[key] = found
            return found


def int64s(values: Sequence[int]) -> ctypes.Array[ctypes.c_int64]:
    """A C array of int64 (at least one element, so an empty list is still a valid pointer)."""
    return (ctypes.c_int64 * max(len(values), 1))(*values)
