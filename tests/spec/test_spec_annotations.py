"""Discovery of ``// @BE name [tokens...]`` annotations."""

from __future__ import annotations

import contextlib

import pytest

from brainevent.errors import SpecError
from brainevent.spec.tokens import Annotation, discover_annotations
from tests.support.properties import given, settings, st


def test_line_annotations_with_and_without_tokens() -> None:
    src = """
    // @BE vector_add arg arg ret stream
    void vector_add(const BE::Tensor a, const BE::Tensor b, BE::Tensor out, int64_t stream);
    //@BE   scale_by   arg ret attr.scale_factor:float32 stream
    // @BE inferred
    """
    assert discover_annotations(src, "k.cu") == [
        Annotation("vector_add", ("arg", "arg", "ret", "stream"), 2, "k.cu"),
        Annotation("scale_by", ("arg", "ret", "attr.scale_factor:float32", "stream"), 4, "k.cu"),
        Annotation("inferred", None, 5, "k.cu"),
    ]


def test_block_and_doc_comment_annotations() -> None:
    src = """
    /* @BE f arg
     * ret
     * stream */
    /// @BE g arg
    //! @BE h
    /** @BE k ret */
    """
    found = {a.function: (a.tokens, a.line) for a in discover_annotations(src)}
    assert found == {
        "f": (("arg", "ret", "stream"), 2),
        "g": (("arg",), 5),
        "h": (None, 6),
        "k": (("ret",), 7),
    }


def test_at_be_outside_comments_is_ignored() -> None:
    src = r"""
    const char* s = "// @BE not_me arg";
    const char* r = R"(
    // @BE nor_me arg
    )";
    char c = '@';
    // text before @BE is not an annotation
    // @BEGIN is another word
    // @be lowercase is not the marker
    """
    assert discover_annotations(src) == []


def test_annotation_on_a_preprocessor_line_counts() -> None:
    assert discover_annotations("#include <x.h> // @BE f arg\n")[0].function == "f"


def test_duplicate_annotation_names_both_lines() -> None:
    src = "// @BE f arg\nvoid f(BE::Tensor a);\n// @BE f ret\n"
    with pytest.raises(SpecError) as info:
        discover_annotations(src, "k.cu")
    message = str(info.value)
    assert "f: annotated twice" in message
    assert "k.cu:1" in message and "k.cu:3" in message
    assert info.value.lines == [1, 3]


@pytest.mark.parametrize("text", ["// @BE", "/* @BE */", "// @BE   "])
def test_annotation_without_name(text: str) -> None:
    with pytest.raises(SpecError, match=r"k\.cu:1: '@BE' annotation names no function"):
        discover_annotations(text, "k.cu")


@pytest.mark.parametrize("name", ["my-func", "1abc", "a.b", "f(x)"])
def test_annotation_with_bad_name(name: str) -> None:
    with pytest.raises(SpecError) as info:
        discover_annotations(f"// @BE {name} arg\n", "k.cu")
    assert repr(name) in str(info.value)
    assert "not a C identifier" in str(info.value)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["// @BE ", "f", " arg", "\n", "/*", "*/", '"', "x"]), max_size=30))
def test_discovery_only_raises_spec_error(pieces: list[str]) -> None:
    with contextlib.suppress(SpecError):
        discover_annotations("".join(pieces))
