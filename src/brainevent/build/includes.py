"""Find the project headers a source includes, so their contents join the cache key.

A line scanner, not a preprocessor: it follows every ``#include`` (even in ``#if 0``), which
can only cause an extra rebuild, never a stale hit. System and JAX headers are left to the
toolchain identity.
"""

from __future__ import annotations

import hashlib
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


def header_closure(
    sources: Sequence[tuple[str, Path | None]], search_dirs: Sequence[Path], skip_dirs: Sequence[Path] = ()
) -> dict[str, str]:
    """{resolved header path: sha256} for every project header reachable from ``sources``
    ((text, directory of the file or None for inline code))."""
    found = _reachable(sources, search_dirs, skip_dirs)
    return {real: hashlib.sha256(data).hexdigest() for real, data in found.items()}


def header_texts(
    sources: Sequence[tuple[str, Path | None]], search_dirs: Sequence[Path], skip_dirs: Sequence[Path] = ()
) -> dict[str, str]:
    """{resolved header path: text} of the same headers as :func:`header_closure`."""
    found = _reachable(sources, search_dirs, skip_dirs)
    return {real: data.decode("utf-8", "replace") for real, data in found.items()}


def scan_includes(
    sources: Sequence[tuple[str, Path | None]], search_dirs: Sequence[Path]
) -> tuple[dict[str, str], list[str]]:
    """``({header path: text}, unresolved)``: :func:`header_texts`, and the include targets
    found nowhere in ``search_dirs`` or the including file's directory (system headers)."""
    texts = header_texts(sources, search_dirs)
    unresolved: set[str] = set()
    scanned = [*sources, *((text, Path(real).parent) for real, text in texts.items())]
    for text, here in scanned:
        for target, quoted in _include_targets(text):
            if _resolve(target, quoted, here, search_dirs) is None:
                unresolved.add(target)
    return texts, sorted(unresolved)


def _reachable(
    sources: Sequence[tuple[str, Path | None]], search_dirs: Sequence[Path], skip_dirs: Sequence[Path]
) -> dict[str, bytes]:
    skip = tuple(os.path.realpath(d) + os.sep for d in skip_dirs)
    found: dict[str, bytes] = {}
    pending: list[tuple[str, Path | None]] = list(sources)
    while pending:
        text, here = pending.pop()
        for target, quoted in _include_targets(text):
            path = _resolve(target, quoted, here, search_dirs)
            if path is None:
                continue
            real = os.path.realpath(path)
            if real in found or real.startswith(skip) or real.startswith(PSEUDO_ROOTS):
                continue
            try:
                found[real] = b"".join(read_blocks(real, limit=HEADER_LIMIT))
            except (OSError, ValueError):  # a header skipped here is still compiled: the compiler reports it
                continue
            pending.append((found[real].decode("utf-8", "replace"), Path(real).parent))
    return dict(sorted(found.items()))
