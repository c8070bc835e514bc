"""A package ``__getattr__`` that imports a public name's submodule on first use."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, exports: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """``__getattr__`` for ``package``: ``exports`` maps a name to its submodule; a loaded
    name is stored in ``namespace`` (the package's globals), so it is looked up once."""

    def __getattr__(name: str) -> Any:
        if name in exports:
            value = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
