"""A small hand-written C++ scanner.

It is not a C++ parser: it splits source text into identifiers, numbers,
punctuation and string/char literals, and sets comments and preprocessor lines
aside, which is all that signature lookup and ``// @BE`` discovery need. It
never raises on odd input: an unterminated literal or comment just ends where
the line (or the text) does, and the compiler reports it later.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from brainevent.errors import SpecError

# Multi-character punctuators worth keeping whole. ``<<``/``>>`` are left as
# single characters so that ``a<b<c>>`` template brackets stay balanced.
_MULTI_PUNCT = ("...", "::", "->", "&&", "||", "##")
_MULTI_FIRST = frozenset(p[0] for p in _MULTI_PUNCT)
_RAW_PREFIXES = frozenset({"R", "LR", "uR", "UR", "u8R"})
_STRING_PREFIXES = frozenset({"L", "u", "U", "u8"})
_MAX_RAW_DELIMITER = 16
_SPLICE = re.compile(r"\\\r?\n")  # a line splice: backslash-newline
# A // comment ends at the first newline not escaped by a trailing backslash.
_LINE_COMMENT = re.compile(r"//(?:[^\n]*\\\r*\n)*[^\n]*")
# A "..." or '...' literal ends at its closing quote or, unterminated, before an unescaped newline.
_QUOTED = {q: re.compile(rf"{q}(?:[^{q}\\\n]|\\[\s\S]?)*{q}?") for q in "\"'"}
# What follows a pp-number's first character: an exponent sign (1e-5, 0x1p+3) belongs to the
# number like its digits, letters, dots and digit separators (1'000) do.
_PP_NUMBER_REST = re.compile(r"(?:[eEpP][+-]|'[^\W_]|[\w.])*")


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
    scanner = _Scanner(source)
    scanner.run()
    return LexResult(tuple(scanner.tokens), tuple(scanner.comments))


class _Scanner:
    def __init__(self, src: str) -> None:
        self.src = src
        self.n = len(src)
        self.i = 0
        self.line = 1
        self.tokens: list[Token] = []
        self.comments: list[Comment] = []

    def peek(self, offset: int = 0) -> str:
        j = self.i + offset
        return self.src[j] if j < self.n else ""

    def advance_to(self, j: int) -> None:
        """Move to ``j``, counting the newlines passed."""
        self.line += self.src.count("\n", self.i, j)
        self.i = j

    def run(self) -> None:
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
            elif c == "/" and self.peek(1) == "/":
                self.line_comment()
            elif c == "/" and self.peek(1) == "*":
                self.block_comment()
            elif directive:
                self.advance_to(self.quoted_end(self.i) if c in "\"'" else self.i + 1)
            elif c == "#" and at_line_start:
                directive = True
                self.i += 1
            else:
                at_line_start = False
                self.token()

    # -- comments ----------------------------------------------------------

    def line_comment(self) -> None:
        found = _LINE_COMMENT.match(self.src, self.i)
        assert found is not None  # the pattern matches "//" alone
        self.comments.append(Comment(self.src[self.i + 2 : found.end()], self.line, block=False))
        self.advance_to(found.end())

    def block_comment(self) -> None:
        start_line = self.line
        end = self.src.find("*/", self.i + 2)
        stop = self.n if end < 0 else end + 2
        body_end = self.n if end < 0 else end
        self.comments.append(Comment(self.src[self.i + 2 : body_end], start_line, block=True))
        self.advance_to(stop)

    # -- tokens --------------------------------------------------------------

    def token(self) -> None:
        c = self.src[self.i]
        start, line = self.i, self.line
        if c.isalpha() or c == "_":
            j = self.i
            while j < self.n and (self.src[j].isalnum() or self.src[j] == "_"):
                j += 1
            word = self.src[start:j]
            nxt = self.src[j] if j < self.n else ""
            if word in _RAW_PREFIXES and nxt == '"':
                end = self.raw_string_end(j)
            elif word in _STRING_PREFIXES and nxt in "\"'" and nxt:
                end = self.quoted_end(j)
            else:
                self.tokens.append(Token("ident", word, line))
                self.i = j
                return
            self.emit_literal(start, end, line)
        elif c.isdigit() or (c == "." and self.peek(1).isdigit()):
            end = self.number_end()
            self.tokens.append(Token("number", self.src[start:end], line))
            self.i = end
        elif c in "\"'":
            self.emit_literal(start, self.quoted_end(start), line)
        else:
            for p in _MULTI_PUNCT if c in _MULTI_FIRST else ():
                if self.src.startswith(p, start):
                    self.tokens.append(Token("punct", p, line))
                    self.i += len(p)
                    return
            self.tokens.append(Token("punct", c, line))
            self.i += 1

    def emit_literal(self, start: int, end: int, line: int) -> None:
        self.tokens.append(Token("string", self.src[start:end], line))
        self.advance_to(end)

    def number_end(self) -> int:
        """End of a pp-number: digits, letters, '.', exponent signs, digit separators."""
        found = _PP_NUMBER_REST.match(self.src, self.i + 1)
        assert found is not None  # the pattern matches the empty string
        return found.end()

    def quoted_end(self, j: int) -> int:
        """End of a "..." or '...' literal starting at ``j``; stops at an unescaped newline."""
        found = _QUOTED[self.src[j]].match(self.src, j)
        assert found is not None  # the pattern matches its opening quote alone
        return found.end()

    def raw_string_end(self, j: int) -> int:
        """End of a raw string R"delim( ... )delim" whose opening quote is at ``j``."""
        open_paren = self.src.find("(", j + 1, j + 2 + _MAX_RAW_DELIMITER)
        delim = self.src[j + 1 : open_paren] if open_paren >= 0 else None
        if delim is None or any(ch in delim for ch in ' ()\\\t\v\f\n"'):
            # Not a valid raw string opening: read it as an ordinary literal.
            return self.quoted_end(j)
        close = self.src.find(")" + delim + '"', open_paren + 1)
        return self.n if close < 0 else close + len(delim) + 2
