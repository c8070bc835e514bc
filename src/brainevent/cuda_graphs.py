"""Make XLA capture brainevent's CUDA handlers in CUDA graphs (command buffers).

Handlers are registered command-buffer compatible by default (``allow_cuda_graph=True``),
but with JAX's default flags XLA does not put custom calls into command buffers at all.
Measured on an H100 (JAX 0.11.2), a 1000-step ``fori_loop`` step of a small kernel costs
about 12 us with default flags and about 4.5 us with custom calls in command buffers.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger("brainevent")

COMMAND_BUFFER_FLAG = "--xla_gpu_enable_command_buffer"
MIN_GRAPH_FLAG = "--xla_gpu_graph_min_graph_size"
DEFAULT_COMMAND_BUFFER_TYPES = ("FUSION", "CUSTOM_CALL")


def _backends_initialized() -> bool:
    try:
        from jax._src import xla_bridge

        return bool(xla_bridge.backends_are_initialized())
    except (ImportError, AttributeError):
        return False


def enable_cuda_graphs(
    types: tuple[str, ...] = DEFAULT_COMMAND_BUFFER_TYPES, min_graph_size: int = 1
) -> bool:
    """Add the XLA flags that let custom calls join CUDA graphs; call before JAX uses the GPU.

    Returns True if the flags are in effect for this process (set now or already set by
    the user), False if JAX's backend was already initialised, in which case the flags
    cannot take effect and a warning is logged with the ``XLA_FLAGS`` line to use instead.
    An explicit ``--xla_gpu_enable_command_buffer`` already in ``XLA_FLAGS`` is kept as is.
    """
    flags = os.environ.get("XLA_FLAGS", "")
    wanted = []
    if COMMAND_BUFFER_FLAG not in flags:
        wanted.append(f"{COMMAND_BUFFER_FLAG}={','.join(types)}")
    if MIN_GRAPH_FLAG not in flags:
        wanted.append(f"{MIN_GRAPH_FLAG}={min_graph_size}")
    if not wanted:
        return True
    if _backends_initialized():
        log.warning(
            "enable_cuda_graphs() came after JAX initialised its backend; start the process with "
            'XLA_FLAGS="%s" instead',
            " ".join([flags, *wanted]).strip(),
        )
        return False
    os.environ["XLA_FLAGS"] = " ".join([flags, *wanted]).strip()
    return True
