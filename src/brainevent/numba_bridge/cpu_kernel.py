"""``numba_kernel``: a Numba ``@njit`` function on XLA's CPU buffers, called from compiled code."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..calls.operands import Signature, content_id
from ..launchers.prepared import Made, PreparedKernels
from .bridge import BridgedFunction
from .stable_text import stable_text

_prepared = PreparedKernels()  # keyed by (id(function), signature)


def require_numba() -> Any:
    try:
        import numba
    except ImportError as exc:
        raise ImportError(f"numba_kernel needs Numba: pip install numba (import failed: {exc})") from exc
    return numba


def preparer(func: Any) -> Callable[[Signature], tuple[str, int]]:
    def make(signature: Signature) -> Made:
        from ..launchers.numba_cpu import cpu_launcher_for, register_cfunc
        from .cpu_compile import compile_entry

        launcher = cpu_launcher_for(len(signature.inputs), len(signature.outputs))
        entry = compile_entry(func, signature)
        kernel_id = content_id("numba-cpu", stable_text(entry.llvm_ir), repr(signature))
        register_cfunc(launcher, kernel_id, entry.address, getattr(func, "__name__", "?"), signature)
        return launcher.target, kernel_id, (func, entry)

    def prepare(signature: Signature) -> tuple[str, int]:
        return _prepared.get_or_make((id(func), signature), lambda: make(signature))

    return prepare


def _target_for(n_inputs: int, n_outputs: int) -> str:
    from ..launchers.numba_cpu import cpu_launcher_for

    return cpu_launcher_for(n_inputs, n_outputs).target


def numba_kernel(
    func: Any,
    outs: Any,
    *,
    vmap_method: str | None = None,
    input_output_aliases: dict[int, int] | None = None,
) -> Callable[..., Any]:
    """Create a JAX-callable function (CPU) from a Numba ``@njit`` function.

    ``func(*inputs, *outputs)`` receives NumPy-like arrays that view XLA's buffers and
    writes its results into the outputs. For each signature it is wrapped in a Numba
    ``cfunc`` that a compiled XLA FFI handler calls directly: no Python runs per call.

    Args:
        func: A ``@numba.njit`` function (a plain function is compiled with ``njit``).
        outs: A ``jax.ShapeDtypeStruct`` or a pytree of them; results come back in that shape.
        vmap_method: As for :func:`numba_cuda_kernel`.
        input_output_aliases: ``{input index: output index}`` for in-place updates.

    An exception raised by ``func`` while it runs makes the call fail with a JAX runtime error
    whose message names ``func`` and what it raised.

    Raises:
        ImportError: Numba is not installed.
    """
    numba = require_numba()
    from numba.core.dispatcher import Dispatcher

    if not isinstance(func, Dispatcher):
        if not callable(func):
            raise TypeError(f"numba_kernel needs a function, got {type(func).__name__}")
        func = numba.njit(func)
    name = getattr(func, "__name__", "numba_kernel")
    return BridgedFunction(preparer(func), _target_for, outs, vmap_method, input_output_aliases, name)
