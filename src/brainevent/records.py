"""``Record``: the base of the value classes a cache hit creates or imports, where a
dataclass or NamedTuple class would cost ten times as much to create (docs/architecture.md,
"The cache-hit path"). A build's path uses NamedTuples (a fifth of a frozen dataclass's
creation cost: a cold load is held to 1.05x of the bare compiler); elsewhere, frozen dataclasses.

A record names its fields once, in order, as ``__slots__ = _fields = (...)``, writes its own
typed ``__init__`` and never changes a field after it; this base adds equality, hashing, a
repr and ``copy_with`` (NamedTuple's ``_replace``) by field values.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self


class Record:
    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()  # the field names, in the order __init__ takes them

    def _values(self) -> tuple[Any, ...]:
        return tuple([getattr(self, name) for name in self._fields])

    def __eq__(self, other: object) -> bool:
        if type(other) is type(self):
            return self._values() == other._values()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({fields})"

    def copy_with(self, **changes: Any) -> Self:
        """A copy with ``changes`` (field name: new value); a name that is not a field is a TypeError."""
        values = {name: getattr(self, name) for name in self._fields}
        values.update(changes)
        return type(self)(**values)
