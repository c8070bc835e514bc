"""Loading and feeding the compiled Numba-CUDA launchers (brainevent/numba_cuda_launcher.h)."""

from __future__ import annotations

import ctypes

from ..calls.operands import Signature
from .launch_config import LaunchConfig
from .library import Launcher, LauncherCache, LauncherSpec, int64s, load_images

_i64, _p64 = ctypes.c_int64, ctypes.POINTER(ctypes.c_int64)
_SPEC = LauncherSpec(
    header="numba_cuda_launcher.h",
    library_prefix="brainevent_numba_cuda",
    function="launch",
    core_call="be_numba_cuda::launch_kernel",
    cuda=True,
    api={
        "be_numba_cuda_register": (ctypes.c_int, [_i64, ctypes.c_char_p, _p64, _i64, _p64, _p64, _i64]),
        "be_numba_cuda_add_image": (None, [_i64, _i64, ctypes.c_char_p, _i64]),
        "be_numba_cuda_preload": (ctypes.c_char_p, [_i64]),
    },
    load_options={"extra_ldflags": ["-ldl"]},
)
# The launcher of an arity (n_inputs, n_outputs); compiled once per machine (the loader caches by content).
_launchers = LauncherCache(_SPEC)
launcher_for = _launchers.get


def register_kernel(
    launcher: Launcher,
    kernel_id: int,
    entry: str,
    images: dict[int, bytes],
    config: LaunchConfig,
    cooperative: bool,
    signature: Signature,
) -> None:
    """Hands a compiled kernel to the launcher's table and loads it on the active devices."""
    lib = launcher.library
    operands = signature.operands
    fresh = lib.be_numba_cuda_register(
        kernel_id,
        entry.encode(),
        int64s(list(config.as_ints())),
        int(cooperative),
        int64s([o.ndim for o in operands]),
        int64s([o.itemsize for o in operands]),
        len(operands),
    )
    if fresh != 0:
        return  # same content already registered: nothing new to load
    added = [(cc, image, len(image)) for cc, image in images.items()]
    load_images(lib, "be_numba_cuda", kernel_id, entry, "Numba kernel", added)
