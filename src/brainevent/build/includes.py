"""Find the project headers a source includes, so their contents join the cache key.

A line scanner, not a preprocessor: it follows every ``#include`` it sees (even in
``#if 0``), which over-approximates the dependencies and so can only cause an
extra rebuild, never a stale hit. Headers outside the source's directory and the
user's include paths (system and JAX headers) are left to the toolchain identity.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..fileio import HEADER_LIMIT, PSEUDO_ROOTS, read_blocks


def _include_targets(text: str) -> Iterable[tuple[str, bool]]:
    """(path, quoted) for each #include directive."""
    for raw in text.splitlines():
        line = raw.strip()
        if not line.startswith("#"):
            continue
        line = line[1:].lstrip()
        if not line.startswith("include"):
            continue
        rest = line[len("include") :].lstrip()
        if rest.startswith('"'):
            end = rest.find('"', 1)
            if end > 1:
                yield rest[1:end], True
        elif rest.startswith("<"):
            end = rest.find(">", 1)
            if end > 1:
                yield rest[1:end], False


def _resolve(target: str, quoted: bool, here: Path | None, search: Sequence[Path]) -> Path | None:
    candidates = ([here] if quoted and here is not None else []) + list(search)
    for base in candidates:
        candidate = base / target
        try:
            if stat.S_ISREG(os.stat(candidate).st_mode):
                return candidate
        except (OSError, ValueError):  # missing, unreadable, too long, or a NUL in the name
            continue
    return None


def _read_header(real: str) -> bytes | None:
    """The file's bytes, or None for anything that is not a readable regular file.

    The scanner only widens the cache key; a header it skips is still compiled, and the
    compiler reports a real problem with it.
    """
    if real.startswith(PSEUDO_ROOTS):
        return None
    try:
        return b"".join(read_blocks(real, limit=HEADER_LIMIT))
    except (OSError, ValueError):
        return None


def header_closure(
    sources: Sequence[tuple[str, Path | None]],
    search_dirs: Sequence[Path],
    skip_dirs: Sequence[Path] = (),
) -> dict[str, str]:
    """{resolved header path: sha256} for every project header reachable from the sources.

    ``sources`` are (text, directory of the file or None for inline code).
    """
    found = _reachable(sources, search_dirs, skip_dirs)
    return {real: hashlib.sha256(data).hexdigest() for real, data in sorted(found.items())}


def header_texts(
    sources: Sequence[tuple[str, Path | None]],
    search_dirs: Sequence[Path],
    skip_dirs: Sequence[Path] = (),
) -> dict[str, str]:
    """{resolved header path: text} of the same headers as :func:`header_closure`."""
    found = _reachable(sources, search_dirs, skip_dirs)
    return {real: data.decode("utf-8", "replace") for real, data in sorted(found.items())}


def scan_includes(
    sources: Sequence[tuple[str, Path | None]],
    search_dirs: Sequence[Path],
) -> tuple[dict[str, str], list[str]]:
    """``({header path: text}, unresolved)``: the headers of :func:`header_texts`, and the
    include targets that neither ``search_dirs`` nor the including file's directory holds
    (the toolkit's or the system's headers)."""
    found = _reachable(sources, search_dirs, ())
    texts = {real: data.decode("utf-8", "replace") for real, data in sorted(found.items())}
    unresolved: set[str] = set()
    scanned = [*sources, *((text, Path(real).parent) for real, text in texts.items())]
    for text, here in scanned:
        for target, quoted in _include_targets(text):
            if _resolve(target, quoted, here, search_dirs) is None:
                unresolved.add(target)
    return texts, sorted(unresolved)


def _reachable(
    sources: Sequence[tuple[str, Path | None]],
    search_dirs: Sequence[Path],
    skip_dirs: Sequence[Path],
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
            if real in found or real.startswith(skip):
                continue
            data = _read_header(real)
            if data is None:
                continue
            found[real] = data
            pending.append((data.decode("utf-8", "replace"), Path(real).parent))
    return found
