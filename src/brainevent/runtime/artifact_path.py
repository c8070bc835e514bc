"""``CompiledModule.path``: a string (as in brainevent 0.2.1) that also answers like a ``Path``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


class ArtifactPath(str):
    """The path of a compiled library: a ``str``, as code written for 0.2.1 expects
    (``mod.path + ".bak"``, ``ctypes.CDLL(mod.path)``), with ``pathlib.Path``'s reading methods and
    properties too (``mod.path.parent``, ``mod.path / "x"``); where both have a name (``replace``,
    ``split``, ...) the string method wins. ``as_path()`` gives a real ``Path``."""

    __slots__ = ()

    def as_path(self) -> Path:
        return Path(self)

    def __truediv__(self, other: str | os.PathLike[str]) -> Path:
        return Path(self) / other

    def __getattr__(self, name: str) -> Any:
        # Only reached for names str lacks; private and dunder names stay str's (pickling,
        # copying and the like must not see Path's).
        if name.startswith("_"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(Path(self), name)

    def __repr__(self) -> str:
        return f"ArtifactPath({str.__repr__(self)})"
