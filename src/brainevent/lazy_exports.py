"""What a package ``__getattr__`` does to import a public name's submodule on first use.

The one idiom: a package lists ``_EXPORTS = {name: submodule}`` and its ``__getattr__`` calls
:func:`load_export`; where an ``if TYPE_CHECKING:`` block re-exports the names for type
checkers, ``__getattr__`` is defined under ``if not TYPE_CHECKING:`` so a misspelt name is an error.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any


def load_export(package: str, exports: Mapping[str, str], namespace: dict[str, Any], name: str) -> Any:
    """``name`` of ``package``, from the submodule ``exports`` maps it to; stored in ``namespace``
    (the package's globals), so that it is looked up once. The package's ``__getattr__`` imports
    this module when first called: importing the package (as a cache hit does) does not."""
    if name in exports:
        value = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
        namespace[name] = value
        return value
    raise AttributeError(f"module {package!r} has no attribute {name!r}")
