"""The one lazy-export idiom, for the root package and its subpackages alike."""

from __future__ import annotations

import importlib
from typing import Any


def load_export(package: str, exports: dict[str, str], namespace: dict[str, Any], name: str) -> Any:
    """The one lazy-export idiom: a package lists ``_EXPORTS = {name: submodule}`` and its
    ``__getattr__`` calls this, which imports the submodule on first use and stores ``name`` in
    ``namespace`` (the package's globals). Where an ``if TYPE_CHECKING:`` block re-exports the
    names, ``__getattr__`` is defined under ``if not TYPE_CHECKING:`` so that a misspelt name is
    an error for type checkers."""
    if name in exports:
        value = namespace[name] = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
        return value
    raise AttributeError(f"module {package!r} has no attribute {name!r}")
