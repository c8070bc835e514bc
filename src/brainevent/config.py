"""The one place that reads ``BRAINEVENT_*`` environment variables.

Each variable is declared once with its type, default and help text; values are
read when asked for (never cached at import), so tests and users may change the
environment at any time.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from .errors import BrainEventError

T = TypeVar("T")


class ConfigError(BrainEventError, ValueError):
    """A ``BRAINEVENT_*`` variable holds a value that cannot be used."""


@dataclass(frozen=True)
class EnvVar(Generic[T]):
    name: str
    parse: Callable[[str], T]
    default: Callable[[], T]
    help: str

    def get(self) -> T:
        raw = os.environ.get(self.name)
        if raw is None or raw == "":
            return self.default()
        try:
            return self.parse(raw)
        except ValueError as exc:
            raise ConfigError(
                f"{self.name}={raw!r} is not valid: {exc}. {self.help}",
                variable=self.name,
                value=raw,
            ) from None


def _bool(raw: str) -> bool:
    low = raw.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected one of 1/0, true/false, yes/no, on/off")


def _positive_float(raw: str) -> float:
    value = float(raw)
    if value <= 0:
        raise ValueError("expected a positive number of seconds")
    return value


def _optional_str(raw: str) -> str | None:
    return raw


def _default_cache_dir() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "brainevent"


CACHE_DIR: EnvVar[Path] = EnvVar(
    "BRAINEVENT_CACHE_DIR",
    lambda raw: Path(raw).expanduser(),
    _default_cache_dir,
    "Directory of the kernel cache (default: $XDG_CACHE_HOME/brainevent or ~/.cache/brainevent).",
)
CXX: EnvVar[str | None] = EnvVar(
    "BRAINEVENT_CXX",
    _optional_str,
    lambda: None,
    "Host C++ compiler to use; overrides $CXX.",
)
NVCC: EnvVar[str | None] = EnvVar(
    "BRAINEVENT_NVCC",
    _optional_str,
    lambda: None,
    "Path of the nvcc to use; skips the search.",
)
CUDA_ARCH: EnvVar[str | None] = EnvVar(
    "BRAINEVENT_CUDA_ARCH",
    _optional_str,
    lambda: None,
    "Compute capabilities to build for, e.g. 'sm_80,sm_90'; pins them when no GPU is present.",
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
ALLOW_UNSUPPORTED_COMPILER: EnvVar[bool] = EnvVar(
    "BRAINEVENT_ALLOW_UNSUPPORTED_COMPILER",
    _bool,
    lambda: False,
    "Pass -allow-unsupported-compiler to nvcc when the host compiler is newer than it accepts.",
)
USE_LOCKS: EnvVar[bool] = EnvVar(
    "BRAINEVENT_USE_LOCKS",
    _bool,
    lambda: True,
    "Set to 0 where file locks are unreliable (some network filesystems): concurrent builders "
    "of one module then may duplicate work, but never corrupt the cache.",
)
REQUIRE_ALL_TESTS: EnvVar[bool] = EnvVar(
    "BRAINEVENT_REQUIRE_ALL_TESTS",
    _bool,
    lambda: False,
    "Test suite only: fail instead of skipping tests that lack what they need (compiler, GPU, "
    "optional package); tests that cannot apply to the machine still skip.",
)

ALL: tuple[EnvVar[object], ...] = (
    CACHE_DIR,
    CXX,
    NVCC,
    CUDA_ARCH,
    LOCK_TIMEOUT,
    COMPILE_TIMEOUT,
    USE_LOCKS,
    ALLOW_UNSUPPORTED_COMPILER,
    REQUIRE_ALL_TESTS,
)  # type: ignore[assignment]
