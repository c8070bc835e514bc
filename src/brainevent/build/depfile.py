"""Read the Makefile-rule dependency files (``-MD -MF``) of g++ and nvcc.

What the compiler lists is what its preprocessor really opened, so it is the truth the cache
records; our own ``#include`` scan is only a hint taken before the build.
"""

from __future__ import annotations

import os
from pathlib import Path


def _rules(text: str) -> list[list[str]]:
    """Each logical line as a list of words, escapes undone, the targets' ``:`` kept as ``":"``."""
    plain = text.replace("\\\n", "").replace("\\\r", "")
    if "$" not in text and "\\" not in plain and "\0" not in text:
        return _plain_rules(text)
    return _escaped_rules(text)


def _plain_rules(text: str) -> list[list[str]]:
    """``_rules`` without escapes, by str.split: the loop below took ~10 ms on a large depfile."""
    rules: list[list[str]] = []
    # Only "\n" ends a rule, and a backslash before "\n" or "\r" continues it while ending
    # the word, as below; the NUL left in its place keeps a ":" just before it in the word.
    joined = text.replace("\\\n", "\0 ").replace("\\\r", "\0 ")
    for line in joined.split("\n"):
        words: list[str] = []
        for word in line.split():
            marker = word.endswith(":")
            word = (word[:-1] if marker else word).replace("\0", "")
            if word:
                words.append(word)
            if marker:
                words.append(":")
        if words:
            rules.append(words)
    return rules


def _escaped_rules(text: str) -> list[list[str]]:
    """``_rules`` of any file, a character at a time."""
    rules: list[list[str]] = [[]]
    current: list[str] = []

    def end_word() -> None:
        if current:
            rules[-1].append("".join(current))
            current.clear()

    i = 0
    while i < len(text):
        ch = text[i]
        nxt = text[i + 1] if i + 1 < len(text) else ""
        if ch == "\\" and nxt in (" ", "#", "\\", ":"):
            current.append(nxt)
            i += 2
            continue
        if ch == "\\" and nxt in ("\n", "\r"):  # line continuation
            end_word()
            i += 2
            continue
        if ch == "$" and nxt == "$":
            current.append("$")
            i += 2
            continue
        if ch == ":" and (nxt == "" or nxt.isspace()):
            end_word()
            rules[-1].append(":")
        elif ch == "\n":
            end_word()
            rules.append([])
        elif ch.isspace():
            end_word()
        else:
            current.append(ch)
        i += 1
    end_word()
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
