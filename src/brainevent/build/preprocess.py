"""Run the compiler's preprocessor on a source unit (cache misses only).

For the spec reader, when a function is made by a macro. The unit's own flags and ``#line``
name are used, so the output's line markers name the user's file and lines.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .. import config
from ..errors import CompileError

if TYPE_CHECKING:
    from ..load_options import LoadOptions, SourceUnit
    from ..platforms.base import Platform

log = logging.getLogger("brainevent.build")


def preprocess(
    directory: Path, units: Sequence[SourceUnit], options: LoadOptions, platform: Platform, file_name: str
) -> str:
    """Unit ``file_name``'s preprocessed text, made in ``directory`` (the build's staging
    directory; scratch files are removed); CompileError on failure."""
    # Imported here: only a function made by a macro needs them.
    from ..codegen import render_kernel_unit
    from .diagnostics import first_error_index
    from .ninja import concrete

    unit = next(u for u in units if u.display_name == file_name)
    scratch = directory / "preprocess"
    scratch.mkdir(exist_ok=True)
    source, output = f"preprocess/unit{unit.suffix}", "preprocess/unit.i"
    (directory / source).write_text(render_kernel_unit(unit.display_name, unit.text, []))
    raw = platform.preprocess_command(options, unit, source, output)
    command = concrete(raw, directory)
    log.debug("reading %s after macro expansion: %s", file_name, " ".join(command))
    try:
        proc = subprocess.run(
            command,
            cwd=directory,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=config.COMPILE_TIMEOUT.get(),
            check=False,
        )
        if proc.returncode != 0:
            text = (proc.stderr or proc.stdout).decode("utf-8", "replace").strip()
            lines = text.splitlines() or ["(no output)"]
            first = lines[first_error_index(lines) or 0].strip()
            raise CompileError(f"the preprocessor failed on {file_name}: {first}", command=command, log=text)
        return (directory / output).read_text(errors="replace")
    except subprocess.TimeoutExpired:
        raise CompileError(f"the preprocessor did not finish on {file_name}", command=command) from None
    except OSError as exc:
        raise CompileError(f"cannot run the preprocessor on {file_name}: {exc}", command=command) from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
