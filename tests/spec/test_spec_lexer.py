"""The hand-written C++ scanner: tokens, comments, literals, preprocessor lines."""

from __future__ import annotations

import pytest

from brainevent.errors import SpecError
from brainevent.spec.cxx_lexer import Comment, Token, lex
from tests.support.properties import given, settings, st


def texts(source: str) -> list[str]:
    return [t.text for t in lex(source).tokens]


def test_kinds_and_lines() -> None:
    result = lex("int x = 42;\nfoo(\"s\", 'c');")
    assert result.tokens == (
        Token("ident", "int", 1),
        Token("ident", "x", 1),
        Token("punct", "=", 1),
        Token("number", "42", 1),
        Token("punct", ";", 1),
        Token("ident", "foo", 2),
        Token("punct", "(", 2),
        Token("string", '"s"', 2),
        Token("punct", ",", 2),
        Token("string", "'c'", 2),
        Token("punct", ")", 2),
        Token("punct", ";", 2),
    )
    assert result.comments == ()


def test_line_comments_are_collected_not_tokens() -> None:
    result = lex("a // @BE f arg\nb //second\n")
    assert texts("a // @BE f arg\nb //second\n") == ["a", "b"]
    assert result.comments == (
        Comment(" @BE f arg", 1, block=False),
        Comment("second", 2, block=False),
    )


def test_line_comment_continued_by_backslash() -> None:
    result = lex("// one \\\n two\nx")
    assert [t.text for t in result.tokens] == ["x"]
    assert result.tokens[0].line == 3
    assert "two" in result.comments[0].text


def test_block_comments_span_lines() -> None:
    result = lex("a /* one\n two { */ b\n/**/c")
    assert [(t.text, t.line) for t in result.tokens] == [("a", 1), ("b", 2), ("c", 3)]
    assert result.comments == (Comment(" one\n two { ", 1, block=True), Comment("", 3, True))


def test_comment_markers_inside_strings_are_text() -> None:
    assert texts('s = "// not a comment /* nor this */";') == [
        "s",
        "=",
        '"// not a comment /* nor this */"',
        ";",
    ]
    assert lex('"// x"').comments == ()


def test_escapes_in_strings_and_chars() -> None:
    src = r'a("quote \" // still string", ' + r"'\'', '\"', '\\') b"
    assert texts(src) == [
        "a",
        "(",
        r'"quote \" // still string"',
        ",",
        r"'\''",
        ",",
        "'\\\"'",
        ",",
        r"'\\'",
        ")",
        "b",
    ]


@pytest.mark.parametrize("prefix", ["L", "u", "U", "u8"])
def test_prefixed_literals(prefix: str) -> None:
    assert texts(f"{prefix}\"x{{\" {prefix}'y'") == [f'{prefix}"x{{"', f"{prefix}'y'"]


def test_raw_strings() -> None:
    src = 'a = R"(no "escape" \\ here } )";\nb = R"xy(has )" inside)xy"; c'
    assert texts(src) == [
        "a",
        "=",
        'R"(no "escape" \\ here } )"',
        ";",
        "b",
        "=",
        'R"xy(has )" inside)xy"',
        ";",
        "c",
    ]


@pytest.mark.parametrize("prefix", ["R", "LR", "uR", "UR", "u8R"])
def test_raw_string_prefixes_and_line_counting(prefix: str) -> None:
    result = lex(f'x = {prefix}"(line1\n// not a comment\n@BE y)";\nz')
    assert result.comments == ()
    assert [t.text for t in result.tokens][-1] == "z"
    assert result.tokens[-1].line == 4


def test_preprocessor_lines_are_skipped() -> None:
    src = (
        "#include <cuda_runtime.h>\n"
        '#include "brainevent/common.h"\n'
        "#define OPEN { \\\n   {\n"
        "  #  pragma once\n"
        "int x;\n"
        "#if 0 // @BE hidden arg\n"
        "#endif\n"
    )
    result = lex(src)
    assert [(t.text, t.line) for t in result.tokens] == [("int", 6), ("x", 6), (";", 6)]
    # Comments on directive lines still count as comments.
    assert result.comments == (Comment(" @BE hidden arg", 7, block=False),)


def test_block_comment_inside_directive_continues_it() -> None:
    result = lex("#define A /* spans\n lines */ {\nint y;")
    assert texts("#define A /* spans\n lines */ {\nint y;") == ["int", "y", ";"]
    assert result.tokens[0].line == 3


def test_hash_not_at_line_start_is_punctuation() -> None:
    assert texts("a # b") == ["a", "#", "b"]


def test_kernel_launch_syntax() -> None:
    src = "k<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(a, b);"
    out = texts(src)
    assert out[:4] == ["k", "<", "<", "<"]
    assert out.count(">") == 3
    assert out[-6:] == ["(", "a", ",", "b", ")", ";"]


def test_multi_character_punctuation() -> None:
    assert texts("::BE::Tensor a->b ... x && y || z ##") == [
        "::",
        "BE",
        "::",
        "Tensor",
        "a",
        "->",
        "b",
        "...",
        "x",
        "&&",
        "y",
        "||",
        "z",
        "##",
    ]
    assert texts("a>>b") == ["a", ">", ">", "b"]


@pytest.mark.parametrize(
    "number", ["0", "42u", "1e-5", "1.5E+10f", ".5f", "0x1p+3", "0xFFull", "1'000'000", "3.14_x"]
)
def test_numbers(number: str) -> None:
    assert lex(f"{number};").tokens[0] == Token("number", number, 1)


def test_line_splices_in_code() -> None:
    result = lex("a \\\nb")
    assert [(t.text, t.line) for t in result.tokens] == [("a", 1), ("b", 2)]


def test_crlf_line_endings() -> None:
    result = lex("a\r\n// c\r\nb")
    assert [(t.text, t.line) for t in result.tokens] == [("a", 1), ("b", 3)]


@pytest.mark.parametrize("src", ['"open', "'x", "/* never closed", 'R"(raw', 'R"abc', "#define \\"])
def test_unterminated_input_does_not_raise(src: str) -> None:
    lex(src + "\nnext")


def test_unterminated_string_stops_at_newline() -> None:
    assert texts('a = "open\nb;')[-2:] == ["b", ";"]


def test_non_string_source() -> None:
    with pytest.raises(SpecError, match="must be a str"):
        lex(b"int x;")  # type: ignore[arg-type]


_cxx_pieces = st.sampled_from(
    [
        "int",
        " ",
        "\n",
        "\t",
        "x",
        "//",
        "/*",
        "*/",
        '"',
        "'",
        "\\",
        'R"(',
        ')"',
        "#",
        "{",
        "}",
        "(",
        ")",
        "<<<",
        ">>>",
        "::",
        "@BE f arg",
        "1e-5",
        "'0'",
        "\r\n",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=200), st.lists(_cxx_pieces, max_size=40).map("".join)))
def test_lex_never_fails_and_lines_are_sane(source: str) -> None:
    result = lex(source)
    last_line = source.count("\n") + 1
    lines = [t.line for t in result.tokens]
    assert lines == sorted(lines)
    assert all(1 <= n <= last_line for n in lines)
    assert all(1 <= c.line <= last_line for c in result.comments)
    for tok in result.tokens:
        assert tok.text and tok.text in source
        assert tok.kind in {"ident", "number", "punct", "string"}
