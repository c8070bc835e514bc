"""Building, loading and feeding the launcher of precompiled GPU kernels (one per operand count)."""

from __future__ import annotations

import ctypes
import functools
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .library import I64, P64, Launcher, LauncherCache, LauncherSpec, int64s, register_images

# Parameter kinds, as brainevent/cubin_launcher.h numbers them (enum Kind).
OPERAND, SCALAR, NULL, SCRATCH = 0, 1, 2, 3


@dataclass(frozen=True)
class Param:
    kind: int  # OPERAND, SCALAR, NULL or SCRATCH
    value: int = 0  # the operand's index, or the scalar's raw bits
    size: int = 0  # the pointer's alignment, or the scalar's byte width


@dataclass(frozen=True)
class Image:
    code: bytes  # a cubin (or PTX text, NUL-terminated)
    shared_mem: int  # dynamic shared memory per block, bytes


_SPEC = LauncherSpec(
    header="cubin_launcher.h",
    library_prefix="brainevent_cubin",
    function="launch",
    core_call="be_cubin::launch_kernel",
    cuda=False,  # built by the host compiler alone: the driver API is dlopen'ed, no nvcc needed
    api={
        "be_cubin_register": (
            ctypes.c_int,
            [I64, ctypes.c_char_p, P64, I64, I64, P64, I64, P64, I64],
        ),
        "be_cubin_add_image": (None, [I64, I64, ctypes.c_char_p, I64, I64]),
        "be_cubin_preload": (ctypes.c_char_p, [I64]),
        "be_cubin_register_blob": (ctypes.c_char_p, [I64, ctypes.c_char_p, I64]),
    },
    # The generic entry (on the CPU) is not registered: calls go to the CUDA handler.
    load_options={"extra_ldflags": ["-ldl"], "auto_register": False},
    handler="be_cubin_handler",
    handler_platform="CUDA",
)
# The launcher of an arity (n_inputs, n_outputs); compiled once per machine (the loader caches by content).
_launchers = LauncherCache(_SPEC)
launcher_for = _launchers.get


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
    element_shapes: Sequence[tuple[int, ...]] | None = None,
) -> None:
    """Hands a compiled kernel to the launcher's table and loads it on the active devices.

    With ``element_shapes`` (one per operand) the kernel was prepared for one batch element:
    each call runs it once per element of the operands' leading dims (the id must cover them)."""
    flat = [v for p in params for v in (p.kind, p.value, p.size)]
    shapes = [v for shape in element_shapes or () for v in (len(shape), *shape)]
    args = (int64s([*grid, *block]), int(cooperative), n_operands, int64s(flat), len(params), int64s(shapes))
    added = [(cc, image.code, len(image.code), image.shared_mem) for cc, image in images.items()]
    register_images(launcher.library, "be_cubin", "GPU kernel", kernel_id, entry, (*args, len(shapes)), added)


# The target of kernels that travel with their program (``jax.export``): one for every arity,
# whose handler registers a call's kernel from its ``kernel`` attribute where this process has not.
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


def register_blob(launcher: Launcher, kernel_id: int, blob: bytes, entry: str) -> None:
    """Registers ``blob``'s kernel under ``kernel_id`` and loads it on the active devices."""
    error = launcher.library.be_cubin_register_blob(kernel_id, blob, len(blob))
    if error:
        from ..errors import LoadError

        raise LoadError(f"cannot load GPU kernel {entry}: {error.decode(errors='replace')}", entry=entry)
