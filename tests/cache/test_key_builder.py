"""The key's serialisation: different inputs never hash alike, equal inputs always do.

docs/caching.md promises that each input is fed with a type tag and its length, so that
no two different sets of inputs produce the same byte stream. Checked here on the
KeyBuilder itself: by a property over arbitrary nested values, and by the collisions a
naive serialisation would have.
"""

from __future__ import annotations

import hashlib
import string
from typing import Any

import pytest

from brainevent.cache import key as key_module
from brainevent.cache.key import CacheKey, KeyBuilder
from tests.support.properties import given, settings, st


def digest(*pairs: tuple[str, Any], kind: str = "cpu") -> str:
    builder = KeyBuilder(kind)
    for tag, value in pairs:
        builder.add(tag, value)
    return builder.finish().digest


def canonical(value: Any) -> Any:
    """What the key must distinguish: the value with its kind (True is not 1, a str not bytes)."""
    if value is None:
        return ("none",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, bytes):
        return ("bytes", value)
    if isinstance(value, dict):
        return ("map", tuple(sorted((k, canonical(v)) for k, v in value.items())))
    return ("seq", tuple(canonical(v) for v in value))


short_text = st.text(alphabet=string.ascii_letters[:4] + "\x00\u00e9", max_size=3)
values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | short_text | st.binary(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(short_text, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(values, values)
def test_different_values_give_different_keys(a: Any, b: Any) -> None:
    same = canonical(a) == canonical(b)
    assert (digest(("v", a)) == digest(("v", b))) == same, (a, b)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(short_text, values), max_size=3), st.lists(st.tuples(short_text, values), max_size=3)
)
def test_different_input_records_give_different_keys(
    a: list[tuple[str, Any]], b: list[tuple[str, Any]]
) -> None:
    # Several tagged inputs in a row: tags and values never run into each other.
    same = [(t, canonical(v)) for t, v in a] == [(t, canonical(v)) for t, v in b]
    assert (digest(*a) == digest(*b)) == same, (a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (["ab", "c"], ["a", "bc"]),  # lengths, not separators
        ([["a"], "b"], [["a", "b"]]),  # nesting: each sequence says how long it is
        ([[]], []),
        ({"a": ["b"]}, {"a": "b"}),
        ({"a": 1, "b": 2}, {"a": 1}),
        ({}, []),
        (None, ""),
        ("", b""),
        ("1", 1),
        (True, 1),
        (False, 0),
        (False, None),
        ("True", True),
        (b"\x00", ""),
        (["a"], "a"),
    ],
)
def test_known_near_collisions_stay_apart(a: Any, b: Any) -> None:
    assert digest(("v", a)) != digest(("v", b))


# One of each kind and shape, nested the ways a naive serialisation would confuse: every
# one must get a key of its own (checked pairwise, deterministically).
REPRESENTATIVES: list[Any] = [
    None, True, False, 0, 1, -1, 10, "", "0", "1", "a", "b", "ab", "True", "None",
    b"", b"0", b"a", [], [None], [[]], [[], []], ["a"], ["b"], ["a", "b"], ["b", "a"], ["ab"],
    [["a"], "b"], [["a", "b"]], ["a", ["b"]], [True], [1], [False], [0],
    {}, {"a": None}, {"b": None}, {"a": "b"}, {"b": "a"}, {"a": 1}, {"b": 1}, {"a": True},
    {"a": {}}, {"a": []}, {"a": [None]}, {"": None},
    {"x": {"a": "b"}, "c": "d"}, {"x": {"a": "b", "c": "d"}},
    {"a": {"b": "c"}, "d": "e"}, {"a": {"b": "c", "d": "e"}},  # same order once sorted
    [{"a": "b"}, "c", "d"], [{"a": "b", "c": "d"}], [{"a": "b"}, {"c": "d"}],
]  # fmt: skip


def test_every_representative_has_its_own_key() -> None:
    keys: dict[str, Any] = {}
    for value in REPRESENTATIVES:
        key = digest(("v", value))
        assert key not in keys, (value, keys.get(key))
        keys[key] = value
    assert len({canonical(v) for v in REPRESENTATIVES}) == len(REPRESENTATIVES)  # all truly distinct


def test_tag_and_value_boundaries() -> None:
    assert digest(("ab", "c")) != digest(("a", "bc"))
    assert digest(("a", "b"), ("c", "d")) != digest(("a", ["b", "c", "d"]))
    assert digest(("a", 1)) != digest(("b", 1))


def test_mapping_order_and_sequence_types_do_not_matter() -> None:
    assert digest(("v", {"a": 1, "b": [2, 3]})) == digest(("v", {"b": [2, 3], "a": 1}))
    assert digest(("v", ("x", "y"))) == digest(("v", ["x", "y"])) == digest(("v", iter(["x", "y"])))
    assert digest(("v", ["x", "y"])) != digest(("v", ["y", "x"]))


def test_kind_and_schema_are_part_of_every_key(monkeypatch: pytest.MonkeyPatch) -> None:
    assert digest(("v", 1), kind="cpu") != digest(("v", 1), kind="cuda")
    before = digest(("v", 1))
    monkeypatch.setattr(key_module, "KEY_SCHEMA", key_module.KEY_SCHEMA + 1)
    assert digest(("v", 1)) != before  # a schema bump misses every old entry


def test_undecodable_file_names_are_keyed() -> None:
    # A path with bytes that are not UTF-8 reaches Python as a lone surrogate.
    assert digest(("path", "/tmp/\udcff.cpp")) != digest(("path", "/tmp/\udcfe.cpp"))


def test_the_digest_is_a_full_sha256_and_short_is_its_first_32_digits() -> None:
    key = KeyBuilder("cpu").add("v", "x").finish()
    assert len(key.digest) == 64 and int(key.digest, 16) >= 0
    assert key.short == key.digest[:32]
    assert CacheKey(hashlib.sha256(b"").hexdigest()).short == "e3b0c44298fc1c149afbf4c8996fb924"


def test_add_chains() -> None:
    builder = KeyBuilder("cpu")
    assert builder.add("a", 1) is builder
