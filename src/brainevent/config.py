"""The one place that reads ``BRAINEVENT_*`` environment variables.

Each variable is declared once with its type, default and help text; values are
read when asked for (never cached at import), so tests and users may change the
environment at any time.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Generic, ParamSpec, TypeVar

from .errors import BrainEventError
from .platform_table import SPELLINGS as PLATFORM_ALIASES

T = TypeVar("T")


class ConfigError(BrainEventError, ValueError):
    """A ``BRAINEVENT_*`` variable holds a value that cannot be used."""

    variable: str | None = None
    value: object = None
    platform: object = None
    backend: object = None


class EnvVar(Generic[T]):
    """One ``BRAINEVENT_*`` variable: its name, parser, default and help text."""

    __slots__ = ("default", "help", "name", "parse")

    def __init__(self, name: str, parse: Callable[[str], T], default: Callable[[], T], help: str) -> None:
        self.name, self.parse, self.default, self.help = name, parse, default, help

    def get(self) -> T:
        raw = _overrides[self.name] if self.name in _overrides else os.environ.get(self.name)
        return self.default() if raw is None or raw == "" else self.checked(raw)

    def checked(self, raw: str, where: str | None = None) -> T:
        """``raw`` parsed; a ConfigError naming the variable (or ``where`` it was given: a
        command-line option), the value and the help otherwise."""
        try:
            return self.parse(raw)
        except ValueError as exc:
            raise ConfigError(
                f"{where or self.name}={raw!r} is not valid: {exc}. {self.help}",
                variable=self.name,
                value=raw,
            ) from None

    def given(self, raw: str | None, where: str) -> T | None:
        """A value given elsewhere for this variable (a command-line option): parsed as the
        variable is, None when absent or empty (as an empty variable counts as unset)."""
        return None if raw is None or raw == "" else self.checked(raw, where)

    def source(self) -> str:
        """Where the value comes from: "set in code", "environment" or "default"."""
        if self.name in _overrides:
            return "set in code"
        return "environment" if os.environ.get(self.name) else "default"


# Values set in code for this process (``brainevent.set_cache_dir``); they win over the
# environment. The only mutable state of this module, changed through ``set_override``.
_overrides: dict[str, str] = {}


def set_override(var: EnvVar[T], raw: str | None) -> None:
    """Makes ``var`` read ``raw`` (parsed now, so a bad value fails here) in this process; None undoes it."""
    if raw is None:
        _overrides.pop(var.name, None)
    else:
        var.checked(raw)
        _overrides[var.name] = raw


def overrides() -> tuple[tuple[str, str], ...]:
    """The values set in code, as (variable, raw value) pairs."""
    return tuple(sorted(_overrides.items()))


def _bool(raw: str) -> bool:
    low = raw.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected one of 1/0, true/false, yes/no, on/off")


def finite_number(raw: str) -> float:
    """A number, refusing nan and infinities (``1e400`` included) by name."""
    value = float(raw)
    if not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {raw.strip()!r}")
    return value


_LONGEST_WAIT = 365 * 86400.0  # a timeout above a year is a mistake (and past what waits accept)


def _positive_float(raw: str) -> float:
    value = finite_number(raw)
    if not 0 < value <= _LONGEST_WAIT:
        raise ValueError(f"expected a positive number of seconds, at most {_LONGEST_WAIT:.0f} (a year)")
    return value


def _path(raw: str) -> Path:
    try:
        return Path(raw).expanduser()
    except RuntimeError:  # ~name of no user, or no home directory to expand ~ to
        head = raw.split("/", 1)[0]
        raise ValueError(
            f"cannot expand {head} (no such user, or no home directory); write the path in full"
        ) from None


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        value = raw.strip().lower()
        if value not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}")
        return value

    return parse


def _default_cache_dir() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "brainevent"


def _switch(name: str, default: bool, help: str) -> EnvVar[bool]:
    """A boolean variable: 1/0, true/false, yes/no or on/off."""
    return EnvVar(name, _bool, lambda: default, help)


CACHE_DIR: EnvVar[Path] = EnvVar(
    "BRAINEVENT_CACHE_DIR",
    _path,
    _default_cache_dir,
    "Directory of the kernel cache (default: $XDG_CACHE_HOME/brainevent or ~/.cache/brainevent).",
)
CXX: EnvVar[str | None] = EnvVar(
    "BRAINEVENT_CXX", str, lambda: None, "Host C++ compiler to use; overrides $CXX."
)
NVCC: EnvVar[str | None] = EnvVar(
    "BRAINEVENT_NVCC", str, lambda: None, "Path of the nvcc to use; skips the search."
)
CUDA_ARCH: EnvVar[str | None] = EnvVar(
    "BRAINEVENT_CUDA_ARCH",
    str,
    lambda: None,
    "Compute capabilities to build for, e.g. 'sm_80,sm_90'; pins them when no GPU is present.",
)
NVCC_PREFER: EnvVar[str] = EnvVar(
    "BRAINEVENT_NVCC_PREFER",
    _choice("pip", "system"),
    lambda: "pip",
    "Where the nvcc search looks first: 'pip' (NVIDIA's wheels; the default) or 'system' "
    "(conda, CUDA_HOME/CUDA_PATH, PATH, then the usual toolkit roots).",
)
LOCK_TIMEOUT: EnvVar[float] = EnvVar(
    "BRAINEVENT_LOCK_TIMEOUT",
    _positive_float,
    lambda: 600.0,
    "Seconds to wait for another process's build of the same module before giving up.",
)
COMPILE_TIMEOUT: EnvVar[float] = EnvVar(
    "BRAINEVENT_COMPILE_TIMEOUT",
    _positive_float,
    lambda: 900.0,
    "Seconds a single build may run before it is stopped and reported.",
)
USE_LOCKS = _switch(
    "BRAINEVENT_USE_LOCKS",
    True,
    "Set to 0 where file locks are unreliable (some network filesystems): concurrent builders "
    "of one module then may duplicate work, but never corrupt the cache.",
)
ALLOW_UNSUPPORTED_COMPILER = _switch(
    "BRAINEVENT_ALLOW_UNSUPPORTED_COMPILER",
    False,
    "Pass -allow-unsupported-compiler to nvcc when the host compiler is newer than it accepts.",
)
CUDA_GRAPHS = _switch(
    "BRAINEVENT_CUDA_GRAPHS",
    True,
    "Set to 0 to keep `import brainevent` from adding --xla_gpu_enable_command_buffer=+CUSTOM_CALL "
    "and --xla_gpu_graph_min_graph_size=2 to XLA_FLAGS (it does so only before JAX starts its "
    "backend, and never over flags already set), which lets small graphs such as a fori_loop "
    "body with custom calls run as CUDA graphs.",
)
OPENMP_PASSIVE = _switch(
    "BRAINEVENT_OPENMP_PASSIVE",
    True,
    "Before the first module that links OpenMP is loaded, set OMP_WAIT_POLICY=PASSIVE unless "
    "OMP_WAIT_POLICY or GOMP_SPINCOUNT is set already: spinning OpenMP threads fight XLA's CPU "
    "thread pool. Set to 0 to leave the runtime's default.",
)
DISTRIBUTED_BUILD = _switch(
    "BRAINEVENT_DISTRIBUTED_BUILD",
    True,
    "In a jax.distributed job, compile each module in one process and send the result to the "
    "others through JAX's coordination service; set to 0 to let every process compile for itself.",
)
DISTRIBUTED_TIMEOUT: EnvVar[float] = EnvVar(
    "BRAINEVENT_DISTRIBUTED_TIMEOUT",
    _positive_float,
    lambda: COMPILE_TIMEOUT.get() + 300.0,
    "Seconds a process of a jax.distributed job waits for the process that builds a module for "
    "the job before raising CompileError (default: BRAINEVENT_COMPILE_TIMEOUT + 300).",
)
FULL_TRACEBACK = _switch(
    "BRAINEVENT_FULL_TRACEBACK",
    False,
    "Set to 1 to keep brainevent's internal frames in the tracebacks of its errors.",
)
_P = ParamSpec("_P")
_R = TypeVar("_R")


def trim_internal_frames(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """``fn`` re-raising brainevent's own errors with a traceback that starts at ``fn``: the
    pipeline's frames under a user error say nothing to act on. BRAINEVENT_FULL_TRACEBACK=1
    keeps them; a bug (not a BrainEventError) always does."""

    @functools.wraps(fn)
    def public(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return fn(*args, **kwargs)
        except BrainEventError as exc:
            if not FULL_TRACEBACK.get():
                # Drop the internal frames; a bare raise adds no frame of its own (unlike
                # `raise exc`), so the traceback ends at the caller's line.
                exc.with_traceback(None)
            raise

    return public


REQUIRE_ALL_TESTS = _switch(
    "BRAINEVENT_REQUIRE_ALL_TESTS",
    False,
    "Test suite only: fail instead of skipping tests that lack what they need (compiler, GPU, "
    "optional package); tests that cannot apply to the machine still skip.",
)

DEBUG = _switch(
    "BRAINEVENT_DEBUG",
    False,
    "Set to 1 to build every module in debug mode (the loaders' debug=None reads it).",
)

# Every variable, in the order declared above.
ALL: tuple[EnvVar[object], ...] = tuple(v for v in globals().values() if isinstance(v, EnvVar))


# -- The global backend choice of XLACustomKernel primitives ---------------------------------
# Not an environment variable: an in-process setting, as in brainevent 0.2.1
# (``brainevent.config.set_backend``). Each primitive reads it when it is lowered.

_global_backends: dict[str, str] = {}  # platform -> backend


def backend_platform(platform: object) -> str:
    """``platform`` as the name primitives use: ``"cpu"``, ``"gpu"`` or ``"tpu"``."""
    if not isinstance(platform, str) or platform not in PLATFORM_ALIASES:
        raise ConfigError(
            f"platform must be one of {sorted(PLATFORM_ALIASES)}, got {platform!r}", platform=platform
        )
    return PLATFORM_ALIASES[platform]


def set_backend(platform: str, backend: str | None) -> None:
    """Prefer ``backend`` on ``platform`` for every ``XLACustomKernel`` that defines it.

    A per-call ``backend=`` still wins; a primitive without that backend keeps its own
    default (and warns once). ``None`` clears the choice for ``platform``. A real change
    clears JAX's caches so that already-compiled functions pick it up on their next call.
    """
    key = backend_platform(platform)
    if backend is not None and (not isinstance(backend, str) or not backend):
        what = "an empty string" if backend == "" else repr(backend)
        raise ConfigError(
            f"backend cannot be {what}: pass a backend name such as 'numba', or None to clear the choice",
            backend=backend,
        )
    if _global_backends.get(key) == backend:
        return
    _global_backends.pop(key, None)
    if backend is not None:
        _global_backends[key] = backend
    _clear_jax_caches()


def get_backend(platform: str) -> str | None:
    """The backend chosen with :func:`set_backend` for ``platform``, or None."""
    return _global_backends.get(backend_platform(platform))


def clear_backends() -> None:
    """Forget every :func:`set_backend` choice (primitives use their own defaults again)."""
    if _global_backends:
        _global_backends.clear()
        _clear_jax_caches()


def _clear_jax_caches() -> None:
    import jax

    jax.clear_caches()  # looked up at call time, so a test may patch it


# ------------------------------------------------- settings made in code (0.2.1's names)


def prefer_system_nvcc(enable: bool = True) -> None:
    """Look for nvcc in the system toolkits (conda, ``CUDA_HOME``, ``PATH``) before NVIDIA's
    pip wheels, or (``False``) the other way round, for the rest of the process; the same as
    ``BRAINEVENT_NVCC_PREFER=system`` / ``pip``."""
    if not isinstance(enable, bool):
        raise ConfigError(f"prefer_system_nvcc(enable={enable!r}): pass True or False", value=repr(enable))
    set_override(NVCC_PREFER, "system" if enable else "pip")


def set_compute_capability(value: str | list[str] | tuple[str, ...] | None = None) -> None:
    """Build CUDA modules for these GPU architectures for the rest of the process, whatever
    GPU is present (``"8.6"``, ``"sm_86"``, ``"compute_86"``, ``"8.6,9.0"`` or a list);
    ``None`` goes back to ``BRAINEVENT_CUDA_ARCH`` or the GPUs found. A loader's
    ``compute_capability=`` still wins for its call."""
    if value is None:
        set_override(CUDA_ARCH, None)
        return
    from .toolchain.cuda_arch import parse_compute_capability

    parse_compute_capability(value)  # the whole value, so an error names all of it
    items = value.replace(",", " ").split() if isinstance(value, str) else list(value)
    names: list[str] = []
    for item in items:  # kept in the caller's order, as 0.2.1 reported them
        names += [a.sm for a in parse_compute_capability(item) if a.sm not in names]
    set_override(CUDA_ARCH, ",".join(names))


def get_compute_capability() -> list[str] | None:
    """The architectures :func:`set_compute_capability` pinned (``["sm_86"]``), or None."""
    pinned = _overrides.get(CUDA_ARCH.name)
    return None if pinned is None else pinned.split(",")


# Numba's parallel setting as 0.2.1 kept it: brainevent's bridges run the user's function as
# compiled (its own `parallel=True` decides), so this is a record for code that reads it.
_numba_parallel = False
_numba_num_threads: int | None = None


def set_numba_parallel(parallel: bool = True, num_threads: int | None = None) -> None:
    """Record whether Numba kernels should run in parallel; with ``num_threads``, also size
    Numba's thread pool (``numba.set_num_threads``)."""
    global _numba_parallel, _numba_num_threads
    if num_threads is not None:
        if isinstance(num_threads, bool) or not isinstance(num_threads, int):
            raise ConfigError(
                f"set_numba_parallel(num_threads={num_threads!r}): pass a positive int or None",
                value=repr(num_threads),
            )
        import numba

        numba.set_num_threads(num_threads)  # raises ValueError naming the allowed range
    _numba_parallel = bool(parallel)
    _numba_num_threads = num_threads


def get_numba_parallel() -> bool:
    return _numba_parallel


def get_numba_num_threads() -> int | None:
    return _numba_num_threads
