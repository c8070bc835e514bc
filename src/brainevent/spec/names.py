"""Small helpers shared by the spec modules: identifier checks, typo hints, type aliases."""

from __future__ import annotations

from collections.abc import Iterable

from brainevent.vocabulary import SCALAR_TYPES

# Extra spellings accepted after ``attr.<name>:`` (values are canonical names): C's names,
# short forms (f32, bf16, i64, u8, c64) and the <cstdint> names of the integers.
TYPE_ALIASES: dict[str, str] = {"float": "float32", "double": "float64", "half": "float16", "int": "int32"}
_SHORT = {"float": "f", "bfloat": "bf", "int": "i", "uint": "u", "complex": "c"}
for _name in SCALAR_TYPES:
    _stem = _name.rstrip("0123456789")
    if _stem in _SHORT:
        TYPE_ALIASES[_SHORT[_stem] + _name[len(_stem) :]] = _name
    if _stem in ("int", "uint"):
        TYPE_ALIASES[f"{_name}_t"] = _name


def canonical_type(name: str) -> str | None:
    """The canonical scalar type for a type name or alias, or None when unknown."""
    return name if name in SCALAR_TYPES else TYPE_ALIASES.get(name)


# C and C++ keywords cannot name a function or an attribute even though they
# look like identifiers; listing the common ones catches the likely mistakes.
CXX_KEYWORDS: frozenset[str] = frozenset(
    """
    alignas alignof and asm auto bool break case catch char char8_t char16_t char32_t
    class concept const consteval constexpr constinit const_cast continue co_await
    co_return co_yield decltype default delete do double dynamic_cast else enum explicit
    export extern false float for friend goto if inline int long mutable namespace new
    noexcept not nullptr operator or private protected public register reinterpret_cast
    requires return short signed sizeof static static_assert static_cast struct switch
    template this thread_local throw true try typedef typeid typename union unsigned
    using virtual void volatile wchar_t while
    """.split()  # noqa: SIM905 - a word block reads better than an 88-item list
)


def is_c_identifier(name: object) -> bool:
    """True for an ASCII C identifier: a letter or ``_`` then letters, digits, ``_``."""
    return isinstance(name, str) and name.isascii() and name.isidentifier()


def close_matches(word: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Likely intended spellings of ``word`` (case-insensitive first, then difflib)."""
    pool = sorted(set(candidates))
    lowered = [c for c in pool if c.lower() == word.lower() and c != word]
    import difflib  # only when a name is wrong: not on the load path

    fuzzy = difflib.get_close_matches(word, pool, n=n, cutoff=0.6)
    return list(dict.fromkeys(lowered + fuzzy))[:n]


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """A ``did you mean ...?`` clause, or an empty string when nothing is close."""
    matches = close_matches(word, candidates)
    return " Did you mean " + " or ".join(repr(m) for m in matches) + "?" if matches else ""


def is_string_list(value: object) -> bool:
    """A list or tuple of str (a bare string is not: it would split into characters)."""
    return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
