"""A small hand-written C++ scanner, not a parser: identifiers, numbers, punctuation and
string/char literals, with comments and preprocessor lines set aside (all that signature lookup
and ``// @BE`` discovery need). It never raises on odd input: an unterminated literal or comment
ends where the line (or the text) does, and the compiler reports it later.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from brainevent.errors import SpecError

_RAW_PREFIXES = frozenset({"R", "LR", "uR", "UR", "u8R"})
_STRING_PREFIXES = frozenset({"L", "u", "U", "u8"})
_MAX_RAW_DELIMITER = 16
_SPLICE = re.compile(r"\\\r?\n")  # a line splice: backslash-newline
_IDENT = re.compile(r"\w*")  # str.isalnum() or "_", as C++ identifiers go
# Multi-character punctuators kept whole, else one character. ``<<``/``>>`` are not in the list,
# so that ``a<b<c>>`` template brackets stay balanced.
_PUNCT = re.compile(r"\.\.\.|::|->|&&|\|\||##|[\s\S]")
# A // comment ends at the first newline not escaped by a trailing backslash.
_LINE_COMMENT = re.compile(r"//(?:[^\n]*\\\r*\n)*[^\n]*")
# A "..." or '...' literal ends at its closing quote or, unterminated, before an unescaped newline.
_QUOTED = {q: re.compile(rf"{q}(?:[^{q}\\\n]|\\[\s\S]?)*{q}?") for q in "\"'"}
# What follows a pp-number's first character: an exponent sign (1e-5, 0x1p+3) belongs to the
# number like its digits, letters, dots and digit separators (1'000) do.
_PP_NUMBER_REST = re.compile(r"(?:[eEpP][+-]|'[^\W_]|[\w.])*")


def _end(pattern: re.Pattern[str], text: str, at: int) -> int:
    found = pattern.match(text, at)
    assert found is not None  # every pattern above matches where the scanner uses it
    return found.end()


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "ident", "number", "punct" or "string" (string and char literals)
    text: str
    line: int  # 1-based line where the token starts


@dataclass(frozen=True, slots=True)
class Comment:
    text: str  # the body, without the // or /* */ markers
    line: int  # 1-based line where the comment starts
    block: bool  # True for /* */ comments


@dataclass(frozen=True)
class LexResult:
    tokens: tuple[Token, ...]
    comments: tuple[Comment, ...]


def lex(source: str) -> LexResult:
    """Split ``source`` into tokens and comments (preprocessor lines are dropped)."""
    if not isinstance(source, str):
        raise SpecError(f"C++ source must be a str, got {type(source).__name__}.", source_type=type(source))
    return _Scanner(source).run()


class _Scanner:
    def __init__(self, src: str) -> None:
        self.src = src
        self.n = len(src)
        self.i = 0
        self.line = 1
        self.tokens: list[Token] = []
        self.comments: list[Comment] = []

    def peek(self) -> str:
        return self.src[self.i + 1 : self.i + 2]

    def advance_to(self, j: int) -> None:
        """Move to ``j``, counting the newlines passed."""
        self.line += self.src.count("\n", self.i, j)
        self.i = j

    def run(self) -> LexResult:
        at_line_start = True
        directive = False  # inside a preprocessor line: skipped, its comments and literals honoured
        while self.i < self.n:
            c = self.src[self.i]
            if c == "\n":
                self.advance_to(self.i + 1)
                at_line_start, directive = True, False
            elif c in " \t\r\f\v":
                self.i += 1
            elif c == "\\" and (splice := _SPLICE.match(self.src, self.i)):
                self.advance_to(splice.end())
            elif c == "/" and self.peek() == "/":
                self.line_comment()
            elif c == "/" and self.peek() == "*":
                self.block_comment()
            elif directive:
                self.advance_to(self.quoted_end(self.i) if c in "\"'" else self.i + 1)
            elif c == "#" and at_line_start:
                directive = True
                self.i += 1
            else:
                at_line_start = False
                self.token()
        return LexResult(tuple(self.tokens), tuple(self.comments))

    def line_comment(self) -> None:
        end = _end(_LINE_COMMENT, self.src, self.i)
        self.comments.append(Comment(self.src[self.i + 2 : end], self.line, block=False))
        self.advance_to(end)

    def block_comment(self) -> None:
        end = self.src.find("*/", self.i + 2)
        body_end = self.n if end < 0 else end
        self.comments.append(Comment(self.src[self.i + 2 : body_end], self.line, block=True))
        self.advance_to(self.n if end < 0 else end + 2)

    def token(self) -> None:
        c, start = self.src[self.i], self.i
        kind = "string"
        if c.isalpha() or c == "_":
            end = _end(_IDENT, self.src, start + 1)
            word, nxt = self.src[start:end], self.src[end : end + 1]
            if word in _RAW_PREFIXES and nxt == '"':
                end = self.raw_string_end(end)
            elif word in _STRING_PREFIXES and nxt and nxt in "\"'":
                end = self.quoted_end(end)
            else:
                kind = "ident"
        elif c.isdigit() or (c == "." and self.peek().isdigit()):
            kind, end = "number", _end(_PP_NUMBER_REST, self.src, start + 1)
        elif c in "\"'":
            end = self.quoted_end(start)
        else:
            kind, end = "punct", _end(_PUNCT, self.src, start)
        self.tokens.append(Token(kind, self.src[start:end], self.line))
        self.advance_to(end)

    def quoted_end(self, j: int) -> int:
        """End of a "..." or '...' literal starting at ``j``; stops at an unescaped newline."""
        return _end(_QUOTED[self.src[j]], self.src, j)

    def raw_string_end(self, j: int) -> int:
        """End of a raw string R"delim( ... )delim" whose opening quote is at ``j``."""
        open_paren = self.src.find("(", j + 1, j + 2 + _MAX_RAW_DELIMITER)
        delim = self.src[j + 1 : open_paren] if open_paren >= 0 else None
        if delim is None or any(ch in delim for ch in ' ()\\\t\v\f\n"'):
            # Not a valid raw string opening: read it as an ordinary literal.
            return self.quoted_end(j)
        close = self.src.find(")" + delim + '"', open_paren + 1)
        return self.n if close < 0 else close + len(delim) + 2
