"""Which backend a lowering tries first, what it falls back to, and the errors when none works.
Order: a call's ``backend=`` alone; else the global choice (``config.set_backend``) if defined
here, else the primitive's default; then the other backends in definition order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import BrainEventError, CompileError, KernelFallbackExhaustedError
from ..platform_table import DEVICE_PLATFORMS

MISSING_HINTS = {p.name: p.kernel_hint for p in DEVICE_PLATFORMS}
SWITCH = (
    "choose one with backend='<name>' on the call, op.set_default(platform, '<name>'), or "
    "brainevent.config.set_backend(platform, '<name>')"
)


def preference(
    backends: Sequence[str], default: str | None, global_choice: str | None
) -> tuple[list[str], bool]:
    """The order to try ``backends`` in, and whether a global choice was ignored (not defined here)."""
    candidates = [c for c in (global_choice, default) if c is not None and c in backends]
    first = candidates[0] if candidates else backends[0]
    return [first, *(b for b in backends if b != first)], global_choice is not None and global_choice != first


def missing_platform(name: str, platform: str, kernels: Mapping[str, Mapping[str, Any]]) -> BrainEventError:
    have = sorted(p for p, entries in kernels.items() if entries)
    hint = MISSING_HINTS.get(platform, "a kernel for a CPU, GPU or TPU platform")
    return KernelFallbackExhaustedError(
        f"XLACustomKernel {name!r} has no kernel for platform {platform!r} "
        f"(it has kernels for: {', '.join(have) or 'no platform yet'}); define one with {hint}",
        kernel=name,
        platform=platform,
        tried=[],
    )


def unknown_backend(name: str, platform: str, backend: str, defined: Sequence[str]) -> BrainEventError:
    return KernelFallbackExhaustedError(
        f"backend={backend!r} was requested, but XLACustomKernel {name!r} defines no such backend "
        f"for platform {platform!r}; it defines {list(defined)}",
        kernel=name,
        platform=platform,
        backend=backend,
        tried=[],
    )


def reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())  # one line per backend in the listing
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def failure(
    name: str, platform: str, failures: Sequence[tuple[str, BaseException]], defined: Sequence[str]
) -> BaseException:
    """The error when every tried backend failed: one failure alone (ours as is, any other as a
    CompileError naming the backend), several as a KernelFallbackExhaustedError listing each."""
    if len(failures) == 1:
        backend, exc = failures[0]
        others = [b for b in defined if b != backend]
        if isinstance(exc, BrainEventError):
            exc.add_note(
                f"(while lowering XLACustomKernel {name!r} with backend {backend!r} on {platform!r})"
            )
            return exc
        alternatives = f" Other backends for {platform!r}: {others}; {SWITCH}." if others else ""
        wrapped = CompileError(
            f"backend {backend!r} of XLACustomKernel {name!r} failed to build or lower its kernel for "
            f"platform {platform!r}: {reason(exc)}.{alternatives}",
            kernel=name,
            platform=platform,
            backend=backend,
        )
        wrapped.__cause__ = exc
        return wrapped
    tried = [(backend, reason(exc)) for backend, exc in failures]
    listing = "\n".join(f"  - {backend!r}: {reason}" for backend, reason in tried)
    error = KernelFallbackExhaustedError(
        f"XLACustomKernel {name!r} has no working backend for platform {platform!r}; tried, in order:\n"
        f"{listing}\nFix one of them, or define another backend for {platform!r}.",
        kernel=name,
        platform=platform,
        tried=tried,
    )
    error.__cause__ = failures[-1][1]
    return error


class IRMark:
    """The block's operations before a backend is tried: a failed try's leftovers are erased."""

    def __init__(self) -> None:
        from jax.interpreters.mlir import ir

        point = ir.InsertionPoint.current
        self._block = point.block
        self._ref = point.ref_operation
        self._count = len(self._block.operations)

    def rollback(self) -> None:
        ops = list(self._block.operations)
        added = len(ops) - self._count
        if added <= 0:
            return
        if self._ref is None:  # inserting at the end of the block
            end = len(ops)
        else:  # inserting before `ref`: the new operations sit just before it
            end = next(i for i, op in enumerate(ops) if op.operation == self._ref.operation)
        for op in reversed(ops[end - added : end]):  # users before the values they use
            op.erase()
