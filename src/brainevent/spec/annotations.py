"""Discover ``// @BE name [tokens...]`` annotations in C++ source.

Only real comments count (the lexer's comment list), so ``"@BE"`` inside a
string literal or a disabled raw string is ignored. ``/* @BE name ... */`` works
too, and its tokens may span lines.
"""

from __future__ import annotations

from dataclasses import dataclass

from brainevent.errors import SpecError
from brainevent.spec.cxx_lexer import Comment, LexResult, lex
from brainevent.spec.names import is_c_identifier

MARKER = "@BE"


@dataclass(frozen=True)
class Annotation:
    function: str
    tokens: tuple[str, ...] | None  # None when only the name follows @BE: infer the spec
    line: int
    file_name: str = "<source>"

    @property
    def where(self) -> str:
        return f"{self.file_name}:{self.line}"


def discover_annotations(
    source: str | LexResult, file_name: str = "<source>", seen: dict[str, Annotation] | None = None
) -> list[Annotation]:
    """All ``@BE`` annotations of one source, in order; a function annotated twice (here, or in
    ``seen``: the annotations of the other sources, by function) is an error."""
    lexed = source if isinstance(source, LexResult) else lex(source)
    seen = {} if seen is None else seen
    found: list[Annotation] = []
    for comment in lexed.comments:
        ann = _parse_comment(comment, file_name)
        if ann is None:
            continue
        first = seen.get(ann.function)
        if first is not None:
            places = "twice, at" if first.file_name == file_name else "in two places,"
            raise SpecError(
                f"{ann.function}: annotated {places} {first.where} and {ann.where}. "
                "Keep one '// @BE' line per function.",
                function=ann.function,
                line=ann.line,
                lines=[first.line, ann.line],
                file=file_name,
            )
        seen[ann.function] = ann
        found.append(ann)
    return found


def _parse_comment(comment: Comment, file_name: str) -> Annotation | None:
    # Doc-comment markers (///, //!, /** and leading * of block lines) are not text.
    body = comment.text.lstrip(" \t\r\n/!*")
    words = body.split()
    if not body.startswith(MARKER) or words[0] != MARKER:
        return None  # no marker, or a different word such as "@BEGIN"
    words = words[1:]
    if comment.block:
        words = [w for w in words if w.strip("*")]
    where = f"{file_name}:{comment.line}"
    if not words:
        raise SpecError(
            f"{where}: '@BE' annotation names no function. Write '// @BE <function> "
            "[tokens...]', e.g. '// @BE vector_add arg arg ret stream'.",
            line=comment.line,
            file=file_name,
        )
    name = words[0]
    if not is_c_identifier(name):
        raise SpecError(
            f"{where}: '@BE' annotation names {name!r}, which is not a C identifier. "
            "Write '// @BE <function> [tokens...]' with the C++ function's name.",
            function=name,
            line=comment.line,
            file=file_name,
        )
    tokens = tuple(words[1:]) or None
    return Annotation(name, tokens, comment.line, file_name)
