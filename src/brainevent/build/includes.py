"""Find the project headers a source includes, so their contents join the cache key.

A line scanner, not a preprocessor: it follows every ``#include`` (even in ``#if 0``), which
can only cause an extra rebuild, never a stale hit. System and JAX headers are left to the
toolchain identity.
"""

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
    unresolved: set[str] | None = None,
) -> dict[str, str]:
    """{resolved header path: text} for every project header reachable from ``sources``
    ((text, directory of the file or None for inline code)); the include targets found nowhere
    in ``search_dirs`` or the including file's directory (system headers) go to ``unresolved``."""
    skip = tuple(os.path.realpath(d) + os.sep for d in skip_dirs)
    found: dict[str, str] = {}
    pending: list[tuple[str, Path | None]] = list(sources)
    while pending:
        text, here = pending.pop()
        for target, quoted in _include_targets(text):
            path = _resolve(target, quoted, here, search_dirs)
            if path is None:
                if unresolved is not None:
                    unresolved.add(target)
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
