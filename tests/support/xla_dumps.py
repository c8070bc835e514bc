"""Reading XLA's dumps to tell whether a custom call runs inside a command buffer (CUDA graph).

A process started with ``--xla_dump_to=DIR`` writes, per compiled module, its optimised HLO
and (XLA releases that lower command buffers on thunks) its thunk sequence. A custom call
inside a CUDA graph shows up either as a ``kCustomCall`` thunk nested under a
``kCommandBuffer`` thunk, or as a ``custom-call`` instruction in a computation that XLA's
command-buffer scheduling outlined (named ``command_buffer...``). Results must already be
right in both cases; this tells which of the two ran.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")

_THUNK = re.compile(r"^(\s*)\d+:\s+(k\w+)")
_COMPUTATION = re.compile(r"^(?:ENTRY\s+)?%?([^\s(]+)\s*\(.*\{\s*$")


@dataclass(frozen=True)
class Placement:
    inside: int  # custom calls inside a command buffer
    outside: int  # custom calls run on their own
    source: str  # the dump file that said so


def thunk_placement(text: str) -> tuple[int, int]:
    """(custom-call thunks with a kCommandBuffer ancestor, those without) in a thunk dump.

    Nesting is by indentation; lines that are not thunks ("body:", "condition:") are skipped.
    """
    inside = outside = 0
    ancestors: list[tuple[int, str]] = []  # (indent, kind) of the open enclosing thunks
    for line in text.splitlines():
        match = _THUNK.match(line)
        if match is None:
            continue
        indent, kind = len(match.group(1)), match.group(2)
        while ancestors and ancestors[-1][0] >= indent:
            ancestors.pop()
        if kind == "kCustomCall":
            if any(k == "kCommandBuffer" for _, k in ancestors):
                inside += 1
            else:
                outside += 1
        ancestors.append((indent, kind))
    return inside, outside


def hlo_placement(text: str) -> tuple[int, int]:
    """(custom-call instructions in outlined command_buffer computations, the others) in HLO text."""
    inside = outside = 0
    computation = ""
    for line in text.splitlines():
        header = _COMPUTATION.match(line)
        if header is not None:
            computation = header.group(1)
        elif " custom-call(" in line:
            if computation.startswith("command_buffer"):
                inside += 1
            else:
                outside += 1
    return inside, outside


def custom_call_placement(dump_dir: Path, module: str) -> Placement:
    """Where the custom calls of the jitted function `module` ran, from the richest dump there is."""
    thunks = sorted(dump_dir.glob(f"*{module}*thunk_sequence_after_thunk_passes*.txt")) or sorted(
        dump_dir.glob(f"*{module}*thunk_sequence.txt")
    )
    for path in thunks[-1:]:
        inside, outside = thunk_placement(path.read_text())
        if inside or outside:
            return Placement(inside, outside, path.name)
    for path in sorted(dump_dir.glob(f"*{module}*after_optimizations.txt"))[-1:]:
        inside, outside = hlo_placement(path.read_text())
        if inside or outside:
            return Placement(inside, outside, path.name)
    names = sorted(p.name for p in dump_dir.iterdir())
    raise AssertionError(f"no dump of {module} in {dump_dir} shows a custom call; files: {names[:60]}")


def run_dumping(
    script: str,
    args: list[str],
    dump_dir: Path,
    module: str,
    xla_flags: str = "",
    platforms: str | None = None,
) -> str:
    """Runs `script` in a fresh interpreter that dumps `module` (a regex) into `dump_dir`; its stdout."""
    env = dict(os.environ, PYTHONPATH=SRC, XLA_PYTHON_CLIENT_PREALLOCATE="false")
    env.pop("JAX_PLATFORMS", None)
    if platforms is not None:
        env["JAX_PLATFORMS"] = platforms
    dump = f"--xla_dump_to={dump_dir} --xla_dump_hlo_as_text --xla_dump_hlo_module_re={module}"
    env["XLA_FLAGS"] = f"{xla_flags} {dump}".strip()
    done = subprocess.run(
        [sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout
