"""Helpers the rewritten 0.2.1 test files import (copied next to them as ``_compat_support.py``).

``public(name)`` looks a name up on this project's ``brainevent``; ``not_applicable(what)`` stands
in for one of 0.2.1's private helpers, which this project does not have. Tests that use a private
helper are skipped by the generated conftest (with the reason from ``run021.NOT_APPLICABLE``), so
a placeholder is only ever touched at import time, where it must stay inert.
"""

from __future__ import annotations

from typing import Any

import pytest


class Missing:
    """A placeholder that fails the test that uses it, naming what is missing."""

    def __init__(self, what: str, why: str) -> None:
        self._what = what
        self._why = why

    def _fail(self) -> Any:
        raise AttributeError(f"{self._what}: {self._why}")

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Missing(f"{self._what}.{attr}", self._why)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._fail()

    def __iter__(self) -> Any:
        return self._fail()

    def __bool__(self) -> bool:
        return bool(self._fail())

    def __repr__(self) -> str:
        return f"<missing {self._what}>"


def public(name: str) -> Any:
    """``brainevent.<name>``, or a placeholder that fails the test that uses it."""
    import brainevent

    try:
        return getattr(brainevent, name)
    except AttributeError:
        return Missing(f"brainevent.{name}", "0.2.1 exports this name; this project does not")


def not_applicable(what: str) -> Any:
    return Missing(what, "a private helper of brainevent 0.2.1 (its tests are listed as not applicable)")


def _has_gpu() -> bool:
    try:
        from brainevent.toolchain.cuda_driver import probe_devices
    except ImportError:
        return False
    probe = probe_devices()
    if not (probe.available and probe.devices):
        return False
    import jax

    try:
        return bool(jax.devices("gpu"))
    except RuntimeError:
        return False


# 0.2.1's own marker skips when JAX sees no GPU; ours asks the driver as well.
requires_gpu = pytest.mark.skipif(not _has_gpu(), reason="no GPU (CUDA driver and JAX both asked)")
