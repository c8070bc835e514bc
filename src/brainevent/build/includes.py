"""Which files a unit reads: a line scan of its ``#include`` lines (a hint before the build: an
``#include`` under ``#if 0`` only costs a rebuild), and the compiler's depfiles, the truth the cache
records (docs/caching.md)."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..fileio import HEADER_LIMIT, PSEUDO_ROOTS, read_blocks

# ``#include "x"`` or ``#include <x>``, per line (any line ending Python splits on).
_INCLUDE = re.compile(r'\s*#\s*include\s*(?:"([^"]+)"|<([^>]+)>)')


def _include_targets(text: str) -> Iterable[tuple[str, bool]]:
    """(path, quoted) for each #include directive."""
    for line in text.splitlines():
        if found := _INCLUDE.match(line):
            yield (found[1], True) if found[1] else (found[2], False)


def _resolve(target: str, quoted: bool, here: Path | None, search: Sequence[Path]) -> Path | None:
    for base in ([here] if quoted and here is not None else []) + list(search):
        candidate = base / target
        try:
            if stat.S_ISREG(os.stat(candidate).st_mode):
                return candidate
        except (OSError, ValueError):  # missing, unreadable, too long, or a NUL in the name
            continue
    return None


def header_texts(
    sources: Sequence[tuple[str, Path | None]],
    search_dirs: Sequence[Path],
    skip_dirs: Sequence[Path] = (),
) -> dict[str, str]:
    """{resolved header path: text} for every project header reachable from ``sources``
    ((text, directory of the file or None for inline code)); targets found nowhere are skipped."""
    skip = tuple(os.path.realpath(d) + os.sep for d in skip_dirs)
    found: dict[str, str] = {}
    pending: list[tuple[str, Path | None]] = list(sources)
    while pending:
        text, here = pending.pop()
        for target, quoted in _include_targets(text):
            path = _resolve(target, quoted, here, search_dirs)
            if path is None:  # a system header
                continue
            real = os.path.realpath(path)
            if real in found or real.startswith(skip) or real.startswith(PSEUDO_ROOTS):
                continue
            try:
                data = b"".join(read_blocks(real, limit=HEADER_LIMIT))
            except (OSError, ValueError):  # a header skipped here is still compiled: the compiler reports it
                continue
            found[real] = data.decode("utf-8", "replace")
            pending.append((found[real], Path(real).parent))
    return dict(sorted(found.items()))


# One match per word, separator or line end; whitespace between them is skipped. A word runs
# until whitespace, a backslash-newline (which continues the rule) or a ":" before whitespace
# (the targets' end); "\ ", "\#", "\\", "\:" and "$$" in it are escapes.
_TOKEN = re.compile(
    r"(?P<word>(?:[^\s\\:$]+|\\[ #\\:]|\$\$?|\\(?![ #\\:\n\r])|:(?!\s|\Z))+)"
    r"|(?P<colon>:)|\\[\n\r]|(?P<end>\n)"
)
_ESCAPE = re.compile(r"\\([ #\\:])|\$(\$)")


def _rules(text: str) -> list[list[str]]:
    """Each logical line as a list of words, escapes undone, the targets' ``:`` kept as ``":"``."""
    rules: list[list[str]] = [[]]
    for token in _TOKEN.finditer(text):
        kind, word = token.lastgroup, token.group()
        if kind == "word":
            rules[-1].append(
                _ESCAPE.sub(lambda m: m[1] or m[2], word) if "\\" in word or "$" in word else word
            )
        elif kind == "colon":
            rules[-1].append(":")
        elif kind == "end":
            rules.append([])
    return [words for words in rules if words]


def read_depfile(path: Path, base: Path) -> list[str]:
    """The prerequisites in ``path``, normalised and absolute (against ``base``), links kept as given."""
    rules = _rules(path.read_text(encoding="utf-8", errors="surrogateescape"))
    words = [word for rule in rules if ":" in rule for word in rule[rule.index(":") + 1 :]]
    return list(dict.fromkeys(os.path.normpath(os.path.join(base, word)) for word in words))
