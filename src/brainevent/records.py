"""``Record``: the base of the small value classes that a cache hit creates or imports.

Making a NamedTuple or dataclass class costs ~10x a plain ``__slots__`` class (docs/architecture.md,
"The cache-hit path"). A record names its fields as ``__slots__ = _fields = (...)`` and writes a
typed ``__init__``; this base adds equality, hashing, a repr and ``copy_with``. Records are values
and do not subclass one another.
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
