"""The cache key: a versioned schema of type-tagged, length-prefixed inputs.

Each input is fed as ``tag, type, length, bytes`` so that no two different input
sets can serialise to the same byte stream (``["ab", "c"]`` vs ``["a", "bc"]``).
"""

# Not `from __future__ import annotations`: a NamedTuple compiles string annotations (docs/architecture.md).
import hashlib
from collections.abc import Iterable, Mapping
from typing import NamedTuple

# Bump when the meaning of any keyed input changes; old entries are then ignored.
KEY_SCHEMA = 2  # 2: headers left the key for the dependency record


class CacheKey(NamedTuple):
    """A key, by its digest."""

    digest: str  # full sha256 hex

    @property
    def short(self) -> str:
        return self.digest[:32]


KeyValue = str | bytes | int | bool | None | Iterable["KeyValue"] | Mapping[str, "KeyValue"]


class KeyBuilder:
    def __init__(self, kind: str) -> None:
        self._hash = hashlib.sha256()
        self.add("schema", KEY_SCHEMA)
        self.add("kind", kind)

    def _feed(self, type_tag: bytes, payload: bytes) -> None:
        self._hash.update(type_tag)
        self._hash.update(len(payload).to_bytes(8, "little"))
        self._hash.update(payload)

    def _value(self, value: KeyValue) -> None:
        if value is None:
            self._feed(b"N", b"")
        elif isinstance(value, bool):
            self._feed(b"B", b"1" if value else b"0")
        elif isinstance(value, int):
            self._feed(b"I", str(value).encode())
        elif isinstance(value, str):
            self._feed(b"S", value.encode("utf-8", "surrogatepass"))
        elif isinstance(value, bytes):
            self._feed(b"Y", value)
        elif isinstance(value, (list, tuple)):  # the common sequences, before the Mapping check
            self._sequence(value)
        elif isinstance(value, (dict, Mapping)):  # dict first: an ABC check costs more
            items = sorted(value.items())
            self._feed(b"M", str(len(items)).encode())
            for k, v in items:
                self._value(k)
                self._value(v)
        else:
            self._sequence(list(value))

    def _sequence(self, items: list[KeyValue] | tuple[KeyValue, ...]) -> None:
        self._feed(b"L", str(len(items)).encode())
        for item in items:
            self._value(item)

    def add(self, tag: str, value: KeyValue) -> "KeyBuilder":
        self._feed(b"T", tag.encode())
        self._value(value)
        return self

    def finish(self) -> CacheKey:
        return CacheKey(self._hash.hexdigest())
