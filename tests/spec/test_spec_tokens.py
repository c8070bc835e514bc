"""The arg_spec token grammar: every token, alias, type and error."""

from __future__ import annotations

import contextlib
import pickle

import pytest

from brainevent.errors import SpecError
from brainevent.spec.names import TYPE_ALIASES, canonical_type
from brainevent.spec.tokens import SpecToken, parse_tokens
from brainevent.vocabulary import SCALAR_TYPES, Role
from tests.support.properties import given, settings, st


@pytest.mark.parametrize(
    ("text", "role"),
    [
        ("arg", Role.ARG),
        ("args", Role.ARG),
        ("ret", Role.RET),
        ("rets", Role.RET),
        ("stream", Role.STREAM),
        ("ctx.stream", Role.STREAM),
    ],
)
def test_simple_tokens_and_aliases(text: str, role: Role) -> None:
    (tok,) = parse_tokens("f", [text])
    assert tok == SpecToken(role)
    assert tok.attr_name is None and tok.dtype is None
    assert tok.canonical == role.value
    assert tok.text == text


@pytest.mark.parametrize("prefix", ["attr", "attrs"])
def test_bare_attr(prefix: str) -> None:
    (tok,) = parse_tokens("f", [f"{prefix}.scale_factor"])
    assert tok == SpecToken(Role.ATTR, "scale_factor", None)
    assert tok.canonical == "attr.scale_factor"


@pytest.mark.parametrize("dtype", SCALAR_TYPES)
@pytest.mark.parametrize("prefix", ["attr", "attrs"])
def test_typed_attr_canonical_types(prefix: str, dtype: str) -> None:
    (tok,) = parse_tokens("f", [f"{prefix}._x1:{dtype}"])
    assert tok == SpecToken(Role.ATTR, "_x1", dtype)
    assert tok.canonical == f"attr._x1:{dtype}"


@pytest.mark.parametrize(
    ("alias", "dtype"),
    [
        ("float", "float32"),
        ("double", "float64"),
        ("int", "int32"),
        ("half", "float16"),
        ("f32", "float32"),
        ("f64", "float64"),
        ("i32", "int32"),
        ("i64", "int64"),
        ("bf16", "bfloat16"),
        ("u8", "uint8"),
        ("c64", "complex64"),
        ("c128", "complex128"),
        ("int64_t", "int64"),
        ("uint32_t", "uint32"),
    ],
)
def test_type_aliases(alias: str, dtype: str) -> None:
    (tok,) = parse_tokens("f", [f"attr.k:{alias}"])
    assert tok.dtype == dtype
    assert canonical_type(alias) == dtype


def test_all_aliases_map_to_canonical_types() -> None:
    assert set(TYPE_ALIASES.values()) <= set(SCALAR_TYPES)
    assert canonical_type("nope") is None


def test_full_spec_and_string_form() -> None:
    expected = [
        SpecToken(Role.ARG),
        SpecToken(Role.RET),
        SpecToken(Role.ATTR, "scale_factor", "float32"),
        SpecToken(Role.STREAM),
    ]
    assert parse_tokens("scale_by", ["arg", "ret", "attr.scale_factor:float32", "stream"]) == (expected)
    assert parse_tokens("scale_by", "arg  ret\tattr.scale_factor:f32\nctx.stream") == expected
    assert parse_tokens("scale_by", ("args", "rets", "attrs.scale_factor:float", "stream")) == (expected)


def test_empty_spec_is_allowed() -> None:
    assert parse_tokens("f", []) == []
    assert parse_tokens("f", "") == []


def test_surrounding_whitespace_is_ignored() -> None:
    assert parse_tokens("f", [" arg "]) == [SpecToken(Role.ARG)]


def test_text_is_not_part_of_equality() -> None:
    assert SpecToken(Role.ARG, text="args") == SpecToken(Role.ARG, text="arg")


def _raises(tokens: object, *needles: str, function: str = "my_fn") -> SpecError:
    with pytest.raises(SpecError) as info:
        parse_tokens(function, tokens)  # type: ignore[arg-type]
    message = str(info.value)
    assert function in message
    for needle in needles:
        assert needle in message, (needle, message)
    return info.value


@pytest.mark.parametrize("bad", [None, 1, 2.5, b"arg", ["arg"]])
def test_non_string_token(bad: object) -> None:
    err = _raises(["arg", bad], repr(bad), "must be a string", "arg, ret, stream")
    assert err.position == 2
    assert err.token == bad


@pytest.mark.parametrize("bad", [None, 7, {"arg": 1}])
def test_non_sequence_spec(bad: object) -> None:
    _raises(bad, "list of token strings", repr(bad))


@pytest.mark.parametrize("bad", ["", "   "])
def test_empty_token(bad: str) -> None:
    err = _raises(["arg", bad], "empty", repr(bad))
    assert err.position == 2


def test_whitespace_inside_token() -> None:
    _raises(["arg ret"], "whitespace", "'arg ret'", "['arg', 'ret']")


@pytest.mark.parametrize(
    ("bad", "hint"),
    [
        ("atr.x", "'attr.x'"),
        ("attrr.scale", "'attr.scale'"),
        ("agr", "'arg'"),
        ("rte", "'ret'"),
        ("strem", "'stream'"),
        ("ARG", "'arg'"),
        ("ctx.strem", "'ctx.stream'"),
    ],
)
def test_typos_get_a_suggestion(bad: str, hint: str) -> None:
    err = _raises([bad], repr(bad), "Expected one of", "Did you mean " + hint)
    assert err.token == bad


def test_unknown_token_without_close_match() -> None:
    _raises(["zzzzzz"], "'zzzzzz'", "not a known token", "attr.<name>", "ctx.stream")


@pytest.mark.parametrize("bad", ["attr.", "attr.1x", "attr.x-y", "attr.int", "attr.naïve"])
def test_bad_attr_names(bad: str) -> None:
    _raises([bad], repr(bad), "not a C identifier", "attr.<name>")


@pytest.mark.parametrize(
    ("bad", "hint"),
    [("attr.x:flaot32", "attr.x:float32"), ("attr.x:int46", "attr.x:int64")],
)
def test_unknown_type_typo(bad: str, hint: str) -> None:
    err = _raises([bad], repr(bad), "not a known scalar type", "float32", hint)
    assert err.dtype == bad.split(":", 1)[1]


def test_unknown_type_without_close_match() -> None:
    _raises(["attr.x:qqqqqq"], "'qqqqqq'", "drop the type", "'attr.x'")


def test_missing_type_after_colon() -> None:
    _raises(["attr.x:"], "'attr.x:'", "nothing after ':'")


def test_extra_colon_is_an_unknown_type() -> None:
    _raises(["attr.x:float32:1"], "'float32:1'")


def test_two_streams() -> None:
    err = _raises(["stream", "arg", "ctx.stream"], "second stream", "'ctx.stream'", "token 1")
    assert err.position == 3


def test_duplicate_attr_names() -> None:
    err = _raises(["attr.k:float32", "arg", "attrs.k"], "repeats attribute name 'k'", "token 1", "'attrs.k'")
    assert err.attribute == "k"
    assert err.position == 3


def test_error_pickles_with_data() -> None:
    err = _raises(["agr"], "agr")
    back = pickle.loads(pickle.dumps(err))
    assert isinstance(back, SpecError)
    assert str(back) == str(err)
    assert back.token == "agr"


# -- property-based -------------------------------------------------------------

_token_like = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["arg", "ret", "stream", "attr.x", "attr.x:f32", "attrs.y:bool", "ctx.stream"]),
    st.builds(lambda n, t: f"attr.{n}:{t}", st.text(max_size=6), st.text(max_size=8)),
    st.none(),
    st.integers(),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_token_like, max_size=8))
def test_parse_tokens_only_raises_spec_error(tokens: list[object]) -> None:
    try:
        out = parse_tokens("fuzz", tokens)  # type: ignore[arg-type]
    except SpecError as err:
        assert "fuzz" in str(err)
    else:
        assert len(out) == len(tokens)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_parse_tokens_on_any_string(text: str) -> None:
    with contextlib.suppress(SpecError):
        parse_tokens("fuzz", text)


_valid_token = st.one_of(
    st.sampled_from(["arg", "args", "ret", "rets"]),
    st.builds(
        lambda p, n, t: f"{p}.{n}" + (f":{t}" if t else ""),
        st.sampled_from(["attr", "attrs"]),
        st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True).filter(
            lambda n: n not in {"int", "do", "if", "for", "new", "try", "and", "or", "not"}
        ),
        st.sampled_from([None, *SCALAR_TYPES, *TYPE_ALIASES]),
    ),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_valid_token, max_size=8, unique_by=lambda t: t.split(":")[0].split(".")[-1]))
def test_canonical_form_round_trips(tokens: list[str]) -> None:
    try:
        parsed = parse_tokens("f", tokens)
    except SpecError as err:
        # Only keyword-named attrs (e.g. 'attr.while') are rejected among these tokens.
        assert "C++ keyword" in str(err)
        return
    again = parse_tokens("f", [t.canonical for t in parsed])
    assert again == parsed
