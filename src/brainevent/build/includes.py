"""Find the project headers a source includes, so their contents join the cache key.

A line scanner, not a preprocessor: it follows every ``#include`` it sees (even in
``#if 0``), which over-approximates the dependencies and so can only cause an
extra rebuild, never a stale hit. Headers outside the source's directory and the
user's include paths (system and JAX headers) are left to the toolchain identity.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path


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
        if candidate.is_file():
            return candidate
    return None


def header_closure(
    sources: Sequence[tuple[str, Path | None]],
    search_dirs: Sequence[Path],
    skip_dirs: Sequence[Path] = (),
) -> dict[str, str]:
    """{resolved header path: sha256} for every project header reachable from the sources.

    ``sources`` are (text, directory of the file or None for inline code).
    """
    skip = tuple(os.path.realpath(d) + os.sep for d in skip_dirs)
    found: dict[str, str] = {}
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
            data = Path(real).read_bytes()
            found[real] = hashlib.sha256(data).hexdigest()
            pending.append((data.decode("utf-8", "replace"), Path(real).parent))
    return dict(sorted(found.items()))
