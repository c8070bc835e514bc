"""Numba's output with its per-process counters taken out, for ids that match across processes.

Numba tags every compiled function's mangled name with an ABI tag ``B<n>v<uid>`` whose uid
counts the functions defined so far in the process. The same kernel defined in another
process (one that runs a ``jax.export`` artifact, or a persistent-cache hit) gets another
uid, so an id hashed from the raw text would name no registered kernel there. Each uid is
replaced by the order of its first appearance: the text keeps its structure (two different
functions stay different) and loses only the counter.
"""

from __future__ import annotations

import re

_ABI_TAG = re.compile(rb"B(\d+)v(\d+)")


def stable_text(text: str | bytes) -> bytes:
    data = text.encode() if isinstance(text, str) else text
    order: dict[bytes, int] = {}

    def renumber(match: re.Match[bytes]) -> bytes:
        length, uid = match.group(1), match.group(2)
        if int(length) != len(uid) + 1:  # not an ABI tag, just bytes that look like one
            return match.group(0)
        tag = b"v%d" % order.setdefault(uid, len(order))
        return b"B%d%s" % (len(tag), tag)

    return _ABI_TAG.sub(renumber, data)
