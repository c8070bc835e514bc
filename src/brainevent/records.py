"""``Record``: the base of the small value classes that a cache hit creates or imports.

Creating a NamedTuple or a dataclass class costs about ten times a plain class with
``__slots__`` (docs/architecture.md, "The cache-hit path"), and the first cache hit of a
process imports every module that defines one. A record is such a plain class: it names its
fields once, in order, as ``__slots__ = _fields = (...)``, and writes its own typed
``__init__``, so that type checkers check each construction. This base adds what a
NamedTuple gave: equality and hashing by field values, a repr naming the fields, and
``copy_with`` (NamedTuple's ``_replace``). Records are values: nothing changes a field after
``__init__``. A record does not subclass another record.
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
