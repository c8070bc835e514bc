"""Make XLA capture brainevent's CUDA handlers in CUDA graphs (command buffers).

``import brainevent`` (:func:`apply_default`), before JAX's backend starts, adds ``+CUSTOM_CALL``
to XLA's command-buffer types and sets ``--xla_gpu_graph_min_graph_size`` to 2 (from 5), keeping
flags the user set; ``BRAINEVENT_CUDA_GRAPHS=0`` turns it off. Why, and the gain:
docs/cuda-tutorial.md, "8. CUDA graphs".
"""

from __future__ import annotations

import os

COMMAND_BUFFER_FLAG = "--xla_gpu_enable_command_buffer"
MIN_GRAPH_FLAG = "--xla_gpu_graph_min_graph_size"
# "+X" adds X to XLA's default types (FUSION, CUBLAS, CUBLASLT, CUSTOM_CALL, CUDNN, ...),
# where a plain list would replace them.
DEFAULT_COMMAND_BUFFER_TYPES = ("+CUSTOM_CALL",)
DEFAULT_MIN_GRAPH_SIZE = 2

# What the import did: one of _ORIGIN's keys (as capture_status tells them), "late" (the
# backend had started) or "" (not run yet).
_import_state = ""
_ORIGIN = {
    "set": "set by import brainevent",  # added before the backend started
    "user": "set in XLA_FLAGS",  # the user set both flags
    "disabled": "BRAINEVENT_CUDA_GRAPHS=0",
    "flagfile": "XLA_FLAGS names a --flagfile, left alone",
}


def _flag_value(flags: str, flag: str) -> str | None:
    """The value of ``flag`` in ``XLA_FLAGS`` ("" when bare; the last wins, as in XLA's parser), or None."""
    found = [v for k, _, v in (t.lstrip("-").partition("=") for t in flags.split()) if k == flag.lstrip("-")]
    return found[-1] if found else None


def _flag_line(flags: str, types: tuple[str, ...], min_graph_size: int) -> str:
    """``flags`` plus whichever of the two flags it does not set already."""
    wanted = {COMMAND_BUFFER_FLAG: ",".join(types), MIN_GRAPH_FLAG: min_graph_size}
    added = [f"{flag}={value}" for flag, value in wanted.items() if _flag_value(flags, flag) is None]
    return " ".join([flags, *added]).strip()


def _late_message(line: str) -> str:
    return (
        "brainevent was imported after JAX started its backend, so custom calls in small "
        "loop bodies will not be captured in CUDA graphs in this process (a 1000-step "
        "fori_loop step can be ~4x slower). Import brainevent before the first JAX computation, "
        f'or start the process with XLA_FLAGS="{line}". Set BRAINEVENT_CUDA_GRAPHS=0 to silence this.'
    )


def _add_flags(types: tuple[str, ...], min_graph_size: int, warn_without_gpu: bool) -> str:
    """Adds the missing flags to XLA_FLAGS: "user" (none missing), "late" (too late: warned) or "set"."""
    flags = os.environ.get("XLA_FLAGS", "")
    line = _flag_line(flags, types, min_graph_size)
    if line == flags.strip():
        return "user"
    from .platform_table import OF_JAX_PLATFORM
    from .platforms import running_platforms

    started = running_platforms()
    if started is not None:
        if warn_without_gpu or "gpu" in {OF_JAX_PLATFORM.get(p) for p in started}:
            _warn(_late_message(line))
        return "late"
    os.environ["XLA_FLAGS"] = line
    return "set"


def apply_default() -> None:
    """Called by ``import brainevent``: add the command-buffer flags unless told not to (cheap: no
    JAX import, no logging import on the common path)."""
    global _import_state
    if _import_state:
        return
    from . import config

    try:
        enabled = config.CUDA_GRAPHS.get()
    except config.ConfigError as exc:
        _warn(f"{exc}; leaving XLA_FLAGS as it is")
        enabled = False
    if not enabled:
        _import_state = "disabled"
    elif _flag_value(os.environ.get("XLA_FLAGS", ""), "--flagfile") is not None:
        _import_state = "flagfile"
    else:
        _import_state = _add_flags(DEFAULT_COMMAND_BUFFER_TYPES, DEFAULT_MIN_GRAPH_SIZE, False)


def _warn(message: str) -> None:
    import logging

    logging.getLogger("brainevent").warning(message)


def enable_cuda_graphs(
    types: tuple[str, ...] = DEFAULT_COMMAND_BUFFER_TYPES, min_graph_size: int = DEFAULT_MIN_GRAPH_SIZE
) -> bool:
    """Add the XLA flags that let custom calls join CUDA graphs; call before JAX uses the GPU.

    ``import brainevent`` already does this unless ``BRAINEVENT_CUDA_GRAPHS=0``; call it to
    opt in explicitly, or with other ``types`` (``"+X"`` adds a type to XLA's defaults, a
    plain list replaces them) or ``min_graph_size``.

    Returns True if the flags are in effect for this process (set now or already set by
    the user), False if JAX's backend was already initialised, in which case the flags
    cannot take effect and a warning is logged with the ``XLA_FLAGS`` line to use instead.
    An explicit ``--xla_gpu_enable_command_buffer`` already in ``XLA_FLAGS`` is kept as is.
    """
    return _add_flags(types, min_graph_size, True) != "late"


def capture_status() -> tuple[bool, str]:
    """Whether custom calls in small graphs are captured in CUDA graphs in this process, and why.

    Judged from ``XLA_FLAGS`` as XLA reads it when its backend starts, and from what
    ``import brainevent`` could do; on a machine without a GPU the flags have no effect.
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if _import_state == "late":
        return False, _late_message(_flag_line(flags, DEFAULT_COMMAND_BUFFER_TYPES, DEFAULT_MIN_GRAPH_SIZE))
    types = _flag_value(flags, COMMAND_BUFFER_FLAG)
    size = _flag_value(flags, MIN_GRAPH_FLAG)
    origin = _ORIGIN.get(_import_state, "XLA_FLAGS")
    if types is not None and not _admits_custom_calls(types):
        return False, f"off: {COMMAND_BUFFER_FLAG}={types} excludes CUSTOM_CALL ({origin})"
    if size is None:
        return False, (
            f"off for small graphs: XLA's minimum graph size (5) keeps a small loop body out of "
            f"CUDA graphs ({origin}); import brainevent before JAX starts, "
            f"or add {MIN_GRAPH_FLAG}={DEFAULT_MIN_GRAPH_SIZE}"
        )
    try:
        minimum = int(size)
    except ValueError:
        return False, f"unknown: {MIN_GRAPH_FLAG}={size!r} is not a number ({origin})"
    if minimum > DEFAULT_MIN_GRAPH_SIZE:
        return False, f"only for runs of at least {minimum} commands: {MIN_GRAPH_FLAG}={minimum} ({origin})"
    return True, f"on: {COMMAND_BUFFER_FLAG}={types or '<XLA default>'} {MIN_GRAPH_FLAG}={minimum} ({origin})"


def _admits_custom_calls(types: str) -> bool:
    items = [t.strip().upper() for t in types.split(",") if t.strip()]
    if items and all(t[0] in "+-" for t in items):  # edits of XLA's defaults, which include it
        return "-CUSTOM_CALL" not in items
    return "CUSTOM_CALL" in items
