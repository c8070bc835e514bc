"""Prints the cells of a matrix run that are not "ok" (for a run on a machine of its own)."""

from __future__ import annotations

import json
import sys

for path in sys.argv[1:]:
    with open(path) as handle:
        found = json.load(handle)
    for kind, row in found.items():
        if kind == "_devices":
            print(path, "devices:", row["count"])
            continue
        bad = [(cell, text) for cell, text in row.items() if text != "ok"]  # run and replay: {cell: outcome}
        print(f"{kind}: {len(row)} ok" if not bad else f"{kind}:")
        for cell, text in bad:
            print(f"  {cell}: {text[:700]}")
