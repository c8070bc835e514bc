"""``numba_cuda_callable``: a Python function that launches Numba-CUDA kernels on XLA's stream.

A compiled handler (built by the host compiler: no nvcc, no CUDA runtime) passes XLA's buffers
and stream to a ctypes trampoline, which wraps them as Numba device arrays (no copies) and calls
the function; an exception there is returned to XLA as the call's error (a ``JaxRuntimeError``
naming it). Python runs on every call, so XLA never captures the handler in a CUDA graph.
"""

from __future__ import annotations

import ctypes
import itertools
import secrets
import traceback
from collections.abc import Callable
from typing import Any

from ..calls.bridge import BridgedFunction, Made, Preparer, memoized, on_signature
from ..calls.operands import Signature
from ..launchers.launcher import LauncherCache, LauncherSpec
from .gpu_kernel import require_numba_cuda

# int run(callable id, buffers, shapes, device, stream, error buffer, its size)
_I64, _PTR = ctypes.c_int64, ctypes.c_void_p
_TRAMPOLINE = ctypes.CFUNCTYPE(
    ctypes.c_int, _I64, ctypes.POINTER(_PTR), ctypes.POINTER(_I64), _I64, _I64, _PTR, _I64
)


_entries: dict[int, tuple[Callable[..., Any], Signature, str]] = {}  # id -> (function, signature, name)
# Ids are per process: an executable from another process (JAX's persistent cache) names
# ids never registered here and fails with a clear error instead of calling another function.
_counter = itertools.count(secrets.randbits(40) << 20)


def _device_arrays(signature: Signature, data: Any, shapes: Any) -> list[Any]:
    from numba import cuda

    arrays, offset = [], 0
    for i, operand in enumerate(signature.operands):
        shape = tuple(int(shapes[offset + j]) for j in range(operand.ndim))
        offset += operand.ndim
        pointer = (int(data[i] or 0), False)  # (address, read-only)
        interface = dict(shape=shape, typestr=operand.dtype.str, data=pointer, strides=None, version=3)
        arrays.append(cuda.from_cuda_array_interface(interface, owner=None, sync=False))
    return arrays


def _run(callable_id: int, data: Any, shapes: Any, device: int, stream: int, error: int, size: int) -> int:
    entry = _entries.get(callable_id)
    if entry is None:
        message = (
            f"numba_cuda_callable id {callable_id} is not registered in this process; call the "
            "wrapper from brainevent.numba_cuda_callable again (executables from another process "
            "cannot be reused)"
        )
    else:
        func, signature, name = entry
        try:
            from numba import cuda

            with cuda.gpus[device]:
                func(*_device_arrays(signature, data, shapes), cuda.external_stream(stream))
            return 0
        except BaseException as exc:  # every exception must reach XLA: a ctypes callback would drop it
            trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:])
            message = f"numba_cuda_callable {name!r} raised {type(exc).__name__}: {exc}\n{trace}"
    text = message.encode("utf-8", errors="replace")[: max(size - 1, 0)]
    ctypes.memmove(error, text + b"\0", len(text) + 1)
    return 1


_trampoline = _TRAMPOLINE(_run)  # kept alive here: every launcher library calls it
_TRAMPOLINE_ADDRESS = int(ctypes.cast(_trampoline, ctypes.c_void_p).value or 0)
_launchers = LauncherCache(
    LauncherSpec(
        header="numba_callable_launcher.h",
        library_prefix="brainevent_numba_callable",
        function="run",
        core_call="be_numba_callable::call",
        api={"be_numba_callable_set_trampoline": (None, [ctypes.c_int64])},
        # The generic entry (on the CPU) is not registered: calls go to the CUDA handler, which
        # tells XLA it cannot be captured in a CUDA graph (Python launches the kernels).
        load_options={"extra_ldflags": ["-ldl"], "auto_register": False},
        handler="be_numba_callable_handler",
        handler_platform="CUDA",
    ),
    setup=lambda library: library.be_numba_callable_set_trampoline(_TRAMPOLINE_ADDRESS),
)


def _preparer(func: Callable[..., Any], name: str) -> Preparer:
    def make(signature: Signature) -> Made:
        callable_id = next(_counter)
        _entries[callable_id] = (func, signature, name)  # keeps func alive with its id
        return _launchers.get(len(signature.inputs), len(signature.outputs)).target, callable_id, (func,)

    return memoized(("numba-callable", id(func)), make)


def numba_cuda_callable(
    func: Callable[..., Any],
    outs: Any,
    *,
    vmap_method: str | None = None,
    input_output_aliases: dict[int, int] | None = None,
) -> Callable[..., Any]:
    """Create a JAX-callable function (GPU) from a Python function that launches Numba-CUDA kernels.

    ``func(*inputs, *outputs, stream)`` receives Numba device arrays viewing XLA's buffers
    (inputs, then the outputs to write) and a Numba stream wrapping XLA's stream; it should
    launch its kernels on that stream (``kernel[grid, block, stream](...)``) and not
    synchronise. Use it when one JAX call needs several kernels or launch logic that
    depends on the shapes; for a single kernel, :func:`numba_cuda_kernel` is faster (no
    Python per call) and can be captured in a CUDA graph.

    Args:
        func: The Python function.
        outs: A ``jax.ShapeDtypeStruct`` or a pytree of them; results come back in that shape.
        vmap_method: ``jax.ffi.ffi_call``'s vmap method (``"sequential"``, ``"expand_dims"``,
            ``"broadcast_all"``, or None to refuse vmap).
        input_output_aliases: ``{input index: output index}`` for in-place updates.

    Raises:
        ImportError: Numba with CUDA support is not installed.
        TypeError: ``func`` is not callable.
    """
    require_numba_cuda()
    if not callable(func):
        raise TypeError(f"numba_cuda_callable needs a callable, got {type(func).__name__}")
    name = getattr(func, "__name__", "numba_cuda_callable")
    prepare = on_signature(_preparer(func, name))
    return BridgedFunction(
        prepare, outs, vmap_method, input_output_aliases, name, launcher_for=_launchers.get
    )
