"""Loading and feeding the compiled Numba-CUDA launchers (brainevent/numba_cuda_launcher.h)."""

from __future__ import annotations

import ctypes

from ..calls.operands import Signature
from .launch_config import LaunchConfig
from .launcher import I64, P64, Launcher, LauncherCache, LauncherSpec, int64s, operand_layout, register_images

_SPEC = LauncherSpec(
    header="numba_cuda_launcher.h",
    library_prefix="brainevent_numba_cuda",
    function="launch",
    core_call="be_numba_cuda::launch_kernel",
    cuda=True,
    api={
        "be_numba_cuda_register": (ctypes.c_int, [I64, ctypes.c_char_p, P64, I64, P64, P64, I64]),
        "be_numba_cuda_add_image": (None, [I64, I64, ctypes.c_char_p, I64]),
        "be_numba_cuda_preload": (ctypes.c_char_p, [I64]),
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
    args = (int64s(list(config.as_ints())), int(cooperative), *operand_layout(signature))
    added = [(cc, image, len(image)) for cc, image in images.items()]
    register_images(launcher.library, "be_numba_cuda", "Numba kernel", kernel_id, entry, args, added)
