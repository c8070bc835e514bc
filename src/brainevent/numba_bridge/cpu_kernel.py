"""``numba_kernel``: a Numba ``@njit`` function on XLA's CPU buffers, called from compiled code."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..calls.bridge import BridgedFunction, Made, Preparer, memoized, on_signature, stable_text
from ..calls.operands import Signature, content_id
from ..launchers.numba_cpu import cpu_launcher_for, register_cfunc


def _entry_source(signature: Signature) -> str:
    """``entry(data, shapes)``: NumPy-like views of each buffer, then the user's function; it
    returns 1, or 0 when func raised (Numba's cfunc wrapper reports it to sys.unraisablehook)."""
    lines, offset = ["def entry(data, shapes):"], 0
    for i, operand in enumerate(signature.operands):
        dims = "".join(f"shapes[{offset + j}], " for j in range(operand.ndim))
        lines.append(f"    a{i} = carray(data[{i}], ({dims}), dtype{i})")
        offset += operand.ndim
    names = ", ".join(f"a{i}" for i in range(len(signature.operands)))
    return "\n".join([*lines, f"    func({names})", "    return 1"]) + "\n"


def compile_entry(func: Any, signature: Signature) -> Any:
    """The Numba ``cfunc`` of ``entry`` (kept alive by its caller: XLA calls its machine code)."""
    import numba
    from numba import types

    namespace: dict[str, Any] = {f"dtype{i}": o.dtype for i, o in enumerate(signature.operands)}
    namespace.update(carray=numba.carray, func=func)
    # Generated code, compiled by Numba; nothing from the user reaches this text.
    exec(compile(_entry_source(signature), "<brainevent numba entry>", "exec"), namespace)
    sig = types.int32(types.CPointer(types.voidptr), types.CPointer(types.int64))
    return numba.cfunc(sig)(namespace["entry"])  # cfuncs are always nopython


def require_numba() -> Any:
    try:
        import numba
    except ImportError as exc:
        raise ImportError(f"numba_kernel needs Numba: pip install numba (import failed: {exc})") from exc
    return numba


def jitted(func: Any, what: str) -> Any:
    """``func`` as a Numba dispatcher: a plain function is compiled with ``njit``."""
    numba = require_numba()
    from numba.core.dispatcher import Dispatcher

    if isinstance(func, Dispatcher):
        return func
    if not callable(func):
        raise TypeError(f"{what} needs a function, got {type(func).__name__}")
    return numba.njit(func)


def preparer(func: Any) -> Preparer:
    def make(signature: Signature) -> Made:
        launcher = cpu_launcher_for(len(signature.inputs), len(signature.outputs))
        entry = compile_entry(func, signature)
        kernel_id = content_id("numba-cpu", stable_text(entry.inspect_llvm()), repr(signature))
        register_cfunc(
            launcher, kernel_id, int(entry.address or 0), getattr(func, "__name__", "?"), signature
        )
        return launcher.target, kernel_id, (func, entry)

    return memoized(("numba-cpu", id(func)), make)


def numba_kernel(
    func: Any,
    outs: Any,
    *,
    vmap_method: str | None = None,
    input_output_aliases: dict[int, int] | None = None,
    zeros: Any = None,
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
        zeros: Results cleared to zero before the kernel runs, for one that accumulates (XLA hands
            them over uncleared): ``True`` (all), an index into ``outs``' leaves, or a list of them.

    An exception raised by ``func`` while it runs makes the call fail with a JAX runtime error
    whose message names ``func`` and what it raised.

    Raises:
        ImportError: Numba is not installed.
    """
    func = jitted(func, "numba_kernel")
    name = getattr(func, "__name__", "numba_kernel")
    prepare = on_signature(preparer(func))
    return BridgedFunction(
        prepare, outs, vmap_method, input_output_aliases, name, launcher_for=cpu_launcher_for, zeros=zeros
    )
