"""Building, loading and feeding the launcher of precompiled GPU kernels (one per operand count)."""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .cubin_launcher_source import CORE, entry_source

# Parameter kinds, as the launcher's C++ core numbers them.
OPERAND, SCALAR, NULL, SCRATCH = 0, 1, 2, 3


@dataclass(frozen=True)
class Param:
    """One kernel parameter: ``kind`` with ``value`` (operand index or the scalar's raw bits)
    and ``size`` (the pointer's alignment, or the scalar's byte width)."""

    kind: int
    value: int = 0
    size: int = 0


@dataclass(frozen=True)
class Image:
    code: bytes  # a cubin (or PTX text, NUL-terminated)
    shared_mem: int  # dynamic shared memory per block, bytes


@dataclass(frozen=True)
class Launcher:
    target: str
    library: ctypes.CDLL


# The launcher holds no device code, so any architecture nvcc accepts will do; a fixed one keeps
# its build independent of the GPUs present (and possible on a machine without one).
LAUNCHER_ARCH = "sm_75"

_lock = threading.Lock()
_launchers: dict[tuple[int, int], Launcher] = {}
_registered: set[int] = set()


def launcher_for(n_inputs: int, n_outputs: int) -> Launcher:
    """The launcher for this arity; compiled once per machine (the loader caches by content)."""
    key = (n_inputs, n_outputs)
    with _lock:
        found = _launchers.get(key)
        if found is not None:
            return found
        from ..cuda_loaders import load_cuda_inline

        module = load_cuda_inline(
            name=f"brainevent_cubin_{n_inputs}i_{n_outputs}o",
            cuda_sources=[CORE, entry_source(n_inputs, n_outputs)],
            extra_ldflags=["-ldl"],
            compute_capability=LAUNCHER_ARCH,
        )
        library = ctypes.CDLL(str(module.path), mode=ctypes.RTLD_LOCAL)  # the handle XLA already uses
        i64, p64 = ctypes.c_int64, ctypes.POINTER(ctypes.c_int64)
        library.be_cubin_register.restype = ctypes.c_int
        library.be_cubin_register.argtypes = [i64, ctypes.c_char_p, p64, i64, i64, p64, i64]
        library.be_cubin_add_image.restype = None
        library.be_cubin_add_image.argtypes = [i64, i64, ctypes.c_char_p, i64, i64]
        library.be_cubin_preload.restype = ctypes.c_char_p
        library.be_cubin_preload.argtypes = [i64]
        found = Launcher(module.targets["launch"], library)
        _launchers[key] = found
        return found


def _int64s(values: Sequence[int]) -> ctypes.Array[ctypes.c_int64]:
    return (ctypes.c_int64 * max(len(values), 1))(*values)


def register(
    launcher: Launcher,
    kernel_id: int,
    entry: str,
    grid: tuple[int, int, int],
    block: tuple[int, int, int],
    params: Sequence[Param],
    n_operands: int,
    images: Mapping[int, Image],
    *,
    cooperative: bool = False,
) -> None:
    """Hands a compiled kernel to the launcher's table and loads it on the active devices."""
    with _lock:
        if kernel_id in _registered:
            return
    lib = launcher.library
    flat = [v for p in params for v in (p.kind, p.value, p.size)]
    fresh = lib.be_cubin_register(
        kernel_id,
        entry.encode(),
        _int64s([*grid, *block]),
        int(cooperative),
        n_operands,
        _int64s(flat),
        len(params),
    )
    if fresh == 0:
        for cc, image in images.items():
            lib.be_cubin_add_image(kernel_id, cc, image.code, len(image.code), image.shared_mem)
        error = lib.be_cubin_preload(kernel_id)
        if error:
            from ..errors import LoadError

            raise LoadError(f"cannot load GPU kernel {entry}: {error.decode(errors='replace')}", entry=entry)
    with _lock:
        _registered.add(kernel_id)
