"""A small hand-written C++ scanner, not a parser: identifiers, numbers, punctuation and
string/char literals, with comments and preprocessor lines set aside (all that signature lookup
and ``// @BE`` discovery need). It never raises on odd input: an unterminated literal or comment
ends where the line (or the text) does, and the compiler reports it later.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from brainevent.errors import SpecError

# What code and preprocessor lines share: line breaks, blanks, line splices and comments.
# A // comment ends at the first newline not escaped by a trailing backslash.
_COMMON = r"""
    (?P<newline>\n) | [ \t\r\f\v]+ | \\\r?\n
  | //(?P<line_comment>(?:[^\n]*\\\r*\n)*[^\n]*)
  | /\*(?P<block_comment>[\s\S]*?)(?:\*/|\Z)
"""
# A "..." or '...' literal ends at its closing quote or, unterminated, before an unescaped newline.
_QUOTED = r""" "(?:[^"\\\n]|\\[\s\S]?)*"? | '(?:[^'\\\n]|\\[\s\S]?)*'? """
_CODE = re.compile(
    _COMMON
    # A raw string R"delim( ... )delim" (a bad delimiter reads as an ordinary literal), a literal
    # with an encoding prefix; a pp-number takes an exponent's sign (1e-5) and digit separators
    # (1'000); multi-character punctuators are kept whole, but not ``<<``/``>>``, so that
    # ``a<b<c>>`` template brackets stay balanced.
    + r"""
  | (?P<string>(?:u8|[uUL])?(?:R"(?P<delim>[^ ()\\\t\v\f\n"]{0,16})\([\s\S]*?(?:\)(?P=delim)"|\Z)|R?"""
    + _QUOTED
    + r"""))
  | (?P<ident>[^\W\d]\w*)
  | (?P<number>\.?\d(?:[eEpP][+-]|'[^\W_]|[\w.])*)
  | (?P<punct>\.\.\.|::|->|&&|\|\||\#\#|[\s\S])
""",
    re.VERBOSE,
)
# Inside a preprocessor line only comments, literals and the line's end matter.
_DIRECTIVE = re.compile(_COMMON + "|" + _QUOTED + r"| [\s\S]", re.VERBOSE)


class Token(NamedTuple):
    kind: str  # "ident", "number", "punct" or "string" (string and char literals)
    text: str
    line: int  # 1-based line where the token starts


class Comment(NamedTuple):
    text: str  # the body, without the // or /* */ markers
    line: int  # 1-based line where the comment starts
    block: bool  # True for /* */ comments


class LexResult(NamedTuple):
    tokens: tuple[Token, ...]
    comments: tuple[Comment, ...]


def lex(source: str) -> LexResult:
    """Split ``source`` into tokens and comments (preprocessor lines are dropped)."""
    if not isinstance(source, str):
        raise SpecError(f"C++ source must be a str, got {type(source).__name__}.", source_type=type(source))
    tokens: list[Token] = []
    comments: list[Comment] = []
    pos, line = 0, 1
    at_line_start, directive = True, False
    while pos < len(source):
        found = (_DIRECTIVE if directive else _CODE).match(source, pos)
        assert found is not None  # the last alternative matches any character
        kind, text = found.lastgroup, found.group()
        if kind == "newline":
            at_line_start, directive = True, False
        elif kind in ("line_comment", "block_comment"):
            comments.append(Comment(found.group(kind), line, block=kind == "block_comment"))
        elif kind == "punct" and text[0] == "#" and at_line_start:
            directive = True  # the rest of the line is skipped, its comments and literals honoured
        elif kind is not None and not directive:
            at_line_start = False
            tokens.append(Token(kind, text, line))
        line += text.count("\n")
        pos = found.end()
    return LexResult(tuple(tokens), tuple(comments))
