"""Read the Makefile-rule dependency files (``-MD -MF``) of g++ and nvcc.

What the compiler lists is what its preprocessor really opened, so it is the truth the cache
records; our own ``#include`` scan is only a hint taken before the build.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# One match per word, separator or line end; whitespace between them is skipped. A word runs
# until whitespace, a backslash-newline (which continues the rule) or a ":" before whitespace
# (the targets' end); "\ ", "\#", "\\", "\:" and "$$" in it are escapes.
_TOKEN = re.compile(
    r"(?P<word>(?:[^\s\\:$]+|\\[ #\\:]|\$\$?|\\(?![ #\\:\n\r])|:(?!\s|\Z))+)"
    r"|(?P<colon>:)|\\[\n\r]|(?P<end>\n)"
)
_ESCAPE = re.compile(r"\\([ #\\:])|\$(\$)")


def _unescape(match: re.Match[str]) -> str:
    return match[1] or match[2]


def _rules(text: str) -> list[list[str]]:
    """Each logical line as a list of words, escapes undone, the targets' ``:`` kept as ``":"``."""
    rules: list[list[str]] = [[]]
    for token in _TOKEN.finditer(text):
        kind, word = token.lastgroup, token.group()
        if kind == "word":
            rules[-1].append(_ESCAPE.sub(_unescape, word) if "\\" in word or "$" in word else word)
        elif kind == "colon":
            rules[-1].append(":")
        elif kind == "end":
            rules.append([])
    return [words for words in rules if words]


def read_depfile(path: Path, base: Path) -> list[str]:
    """The prerequisites in ``path``, normalised and absolute (against ``base``), links kept as given."""
    deps: list[str] = []
    seen: set[str] = set()
    for words in _rules(path.read_text(encoding="utf-8", errors="surrogateescape")):
        if ":" not in words:
            continue
        for word in words[words.index(":") + 1 :]:
            full = os.path.normpath(word if os.path.isabs(word) else os.path.join(base, word))
            if full not in seen:
                seen.add(full)
                deps.append(full)
    return deps
