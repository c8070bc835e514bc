"""Every ``XLACustomKernel`` made in this process, by name, for tools that list or benchmark them.

An explicit, documented registry (the only global state of this package besides JAX's own):
each primitive adds itself when it is created. A second primitive under a name already
present replaces the first here, with a warning; both keep working as JAX primitives.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .primitive import XLACustomKernel

_registry: dict[str, XLACustomKernel] = {}
_lock = threading.Lock()


def register_primitive(name: str, primitive: XLACustomKernel) -> None:
    """Adds ``primitive`` under ``name``; warns when the name is already taken."""
    with _lock:
        taken = name in _registry and _registry[name] is not primitive
        _registry[name] = primitive
    if taken:
        warnings.warn(
            f"an XLACustomKernel named {name!r} is already registered; the registry now holds the new "
            "one (both still work as JAX primitives, but get_registry() and benchmarks see only the "
            "newest). Give each primitive a unique name to silence this.",
            UserWarning,
            stacklevel=3,
        )


def get_registry() -> dict[str, XLACustomKernel]:
    """A copy of the registry: primitive name to ``XLACustomKernel``."""
    with _lock:
        return dict(_registry)


def get_all_primitive_names() -> list[str]:
    """The names of every registered primitive, sorted."""
    with _lock:
        return sorted(_registry)


def get_primitives_by_tags(tags: Iterable[str]) -> dict[str, XLACustomKernel]:
    """The primitives carrying every one of ``tags`` (see ``XLACustomKernel.def_tags``)."""
    if isinstance(tags, str):
        tags = {tags}  # a single tag given bare, not its letters
    wanted = set(tags)
    with _lock:
        return {name: prim for name, prim in _registry.items() if wanted <= prim.tags}
