"""Building, loading and feeding the launcher of precompiled GPU kernels (one per operand count)."""

from __future__ import annotations

import ctypes
import functools
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..calls.operands import content_id
from ..errors import KernelCallError, LoadError
from .launcher import I64, Launcher, LauncherCache, LauncherSpec

if TYPE_CHECKING:
    from ..toolchain.cuda_arch import CudaArch

# Parameter kinds, as brainevent/cubin_launcher.h numbers them (enum Kind). EXTENT: dim ``size``
# of operand ``value`` as the call gives it (-1: its element count); STRIDE: the bytes between
# neighbours along that dim of the dense row-major array (Numba-CUDA's array parameters).
OPERAND, SCALAR, NULL, SCRATCH, EXTENT, STRIDE = 0, 1, 2, 3, 4, 5


@dataclass(frozen=True, slots=True)
class Param:
    kind: int  # OPERAND, SCALAR, NULL or SCRATCH
    value: int = 0  # the operand's index, or the scalar's raw bits
    size: int = 0  # the pointer's alignment, or the scalar's byte width


@dataclass(frozen=True, slots=True)
class Image:
    code: bytes  # a cubin (or PTX text, NUL-terminated)
    shared_mem: int  # dynamic shared memory per block, bytes


_SPEC = LauncherSpec(
    header="cubin_launcher.h",
    library_prefix="brainevent_cubin",
    function="launch",
    core_call="be_cubin::launch_kernel",
    api={"be_cubin_register_blob": (ctypes.c_char_p, [I64, ctypes.c_char_p, I64])},
    # The generic entry (on the CPU) is not registered: calls go to the CUDA handler.
    load_options={"extra_ldflags": ["-ldl"], "auto_register": False},
    handler="be_cubin_handler",
    handler_platform="CUDA",
)
# The library of an arity (n_inputs, n_outputs), compiled once per machine (the loader caches by
# content); calls go to EXPORT_TARGET, the handler of (1, 1)'s, whatever their arity.
_launchers = LauncherCache(_SPEC)
launcher_for = _launchers.get


# The one target of every precompiled kernel, whatever its arity; its handler also registers a
# call's kernel from its ``kernel`` attribute (a program exported with it) where this process has not.
EXPORT_TARGET = "brainevent_cubin.launch"


def kernel_blob(
    entry: str,
    grid: tuple[int, int, int],
    block: tuple[int, int, int],
    params: Sequence[Param],
    n_operands: int,
    images: Mapping[int, Image],
    element_shapes: Sequence[tuple[int, ...]] | None = None,
    cooperative: bool = False,
) -> bytes:
    """A kernel as the ``kernel`` attribute carries it (be_cubin_register_blob reads it): format 1."""
    name, ordered = entry.encode(), sorted(images.items())
    flat = [v for p in params for v in (p.kind, p.value, p.size)]
    shapes = [v for shape in element_shapes or () for v in (len(shape), *shape)]
    ints = [1, *grid, *block, int(cooperative), n_operands, len(params), *flat, len(shapes), *shapes]
    ints += [len(name), len(ordered)]
    ints += [v for cc, image in ordered for v in (cc, image.shared_mem, len(image.code))]
    return b"".join([struct.pack(f"<{len(ints)}q", *ints), name, *(image.code for _, image in ordered)])


@functools.cache
def export_launcher() -> Launcher:
    """The launcher behind :data:`EXPORT_TARGET` (registered for XLA's instantiation too, which
    loads a program's kernels before a CUDA graph captures them); once per process."""
    from ..runtime.registry import register_handler

    library = launcher_for(1, 1).library
    target = register_handler(EXPORT_TARGET, library, "be_cubin_handler", "CUDA", ("instantiate", "execute"))
    return Launcher(target, library)


def scalar(data: bytes) -> Param:
    """A scalar parameter from its little-endian bytes (at most 8)."""
    return Param(SCALAR, int.from_bytes(data.ljust(8, b"\0"), "little", signed=True), len(data))


def gpu_archs(requested: Sequence[CudaArch] | None, who: str, how: str) -> list[CudaArch]:
    """The architectures to compile for: those requested, else those of the visible GPUs (JAX's
    first); KernelCallError when there is none (``how``: how to name one instead)."""
    from ..toolchain.cuda_arch import visible_archs

    found = list(requested or visible_archs(jax_first=True))
    if not found:
        raise KernelCallError(
            f"{who} compiles for the GPUs present, and neither JAX nor the CUDA driver reports one; run "
            f"on a GPU machine, or {how}",
            kernel=who,
        )
    return found


def prepare_launch(
    kind: str,
    entry: str,
    grid: tuple[int, int, int],
    block: tuple[int, int, int],
    params: Sequence[Param],
    n_operands: int,
    images: Mapping[int, Image],
    *,
    cooperative: bool = False,
    content: Sequence[bytes | str] | None = None,
) -> tuple[str, int]:
    """Registers a Triton or Numba-CUDA kernel as :func:`kernel_blob` writes it and loads it on the
    active devices (LoadError when the driver refuses); ``(FFI target, kernel id)``. The id covers
    the whole kernel (``content`` instead of the entry and the images' bytes, where they differ
    between processes)."""
    blob = kernel_blob(entry, grid, block, params, n_operands, images, cooperative=cooperative)
    if content is None:
        return register_kernel(kind, blob, entry)
    bare = {cc: Image(b"", image.shared_mem) for cc, image in images.items()}
    layout = kernel_blob("", grid, block, params, n_operands, bare, cooperative=cooperative)
    return register_kernel(kind, blob, entry, layout, *content)


def register_kernel(kind: str, blob: bytes, entry: str, *content: bytes | str) -> tuple[str, int]:
    """``blob`` registered under its content id (of ``content`` where given) with the launcher
    behind :data:`EXPORT_TARGET` and loaded on the active devices; ``(that target, kernel id)``."""
    kernel_id = content_id(kind, *(content or (blob,)))
    launcher = export_launcher()
    error = launcher.library.be_cubin_register_blob(kernel_id, blob, len(blob))
    if error:
        raise LoadError(f"cannot load GPU kernel {entry}: {error.decode(errors='replace')}", entry=entry)
    return launcher.target, kernel_id
