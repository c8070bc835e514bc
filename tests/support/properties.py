"""Hypothesis for the property tests, or, where it is not installed, stand-ins that skip them.

A module imports ``given``, ``settings``, ``st`` and ``HealthCheck`` from here instead of from
``hypothesis``: without Hypothesis (the quick tier needs nothing beyond pytest) each property
test skips, saying what to install, and the module's other tests still run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

MISSING = "Hypothesis is not installed (pip install hypothesis, or the test extra): a property test"

try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError:

    class _Inert:
        """Whatever a module builds from strategies at import time: never drawn from."""

        def __getattr__(self, name: str) -> _Inert:
            return self

        def __call__(self, *args: Any, **kwargs: Any) -> _Inert:
            return self

        def __or__(self, other: object) -> _Inert:
            return self

        def __iter__(self) -> Iterator[object]:
            return iter(())

    st = HealthCheck = _Inert()  # type: ignore[assignment]

    def given(*args: Any, **kwargs: Any) -> Callable[[Any], Any]:  # type: ignore[no-redef]
        return pytest.mark.skip(reason=MISSING)

    def settings(*args: Any, **kwargs: Any) -> Callable[[Any], Any]:  # type: ignore[no-redef]
        return lambda test: test


__all__ = ["MISSING", "HealthCheck", "given", "settings", "st"]
