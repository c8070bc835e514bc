"""Find the project headers a source includes, so their contents join the cache key.

A line scanner, not a preprocessor: it follows every ``#include`` (even in ``#if 0``), which
can only cause an extra rebuild, never a stale hit. System and JAX headers are left to the
toolchain identity.
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
    """The file's bytes, or None (a skipped header is still compiled; the compiler reports it)."""
    if real.startswith(PSEUDO_ROOTS):
        return None
    try:
        return b"".join(read_blocks(real, limit=HEADER_LIMIT))
    except (OSError, ValueError):
        return None


def header_closure(
    sources: Sequence[tuple[str, Path | None]], search_dirs: Sequence[Path], skip_dirs: Sequence[Path] = ()
) -> dict[str, str]:
    """{resolved header path: sha256} for every project header reachable from ``sources``
    ((text, directory of the file or None for inline code))."""
    found = _reachable(sources, search_dirs, skip_dirs)
    return {real: hashlib.sha256(data).hexdigest() for real, data in sorted(found.items())}


def header_texts(
    sources: Sequence[tuple[str, Path | None]], search_dirs: Sequence[Path], skip_dirs: Sequence[Path] = ()
) -> dict[str, str]:
    """{resolved header path: text} of the same headers as :func:`header_closure`."""
    found = _reachable(sources, search_dirs, skip_dirs)
    return {real: data.decode("utf-8", "replace") for real, data in sorted(found.items())}


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
            if real in found or real.startswith(skip):
                continue
            data = _read_header(real)
            if data is None:
                continue
            found[real] = data
            pending.append((data.decode("utf-8", "replace"), Path(real).parent))
    return found
