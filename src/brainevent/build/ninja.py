"""Write a build.ninja for the build steps and run it (commands ``shlex.join``-quoted: no shell reads
user text); and run the preprocessor alone, for the spec reader when a macro makes a function."""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import sysconfig
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import CompileError, SpecError, ToolchainError
from ..fileio import atomic_write, make_dir
from . import BUILD_DIR
from .runner import ProcessJob, supervise
from .step import BuildStep

if TYPE_CHECKING:
    from ..load_options import SourceUnit

    # (unit, its source file, the output file) -> the preprocessor's command (the platform's)
    PreprocessCommand = Callable[[SourceUnit, str, str], list[str]]

log = logging.getLogger("brainevent.build")


def ninja_executable() -> str:
    # Where `pip install ninja` puts the binary for this interpreter: found without importing
    # the package (a cold load's milliseconds); the package knows the other layouts.
    scripts = Path(sysconfig.get_path("scripts")) / "ninja"
    if scripts.is_file():
        return str(scripts)
    try:
        import ninja  # the PyPI wheel ships the binary

        candidate = Path(ninja.BIN_DIR) / "ninja"
        if candidate.exists():
            return str(candidate)
    except (ImportError, AttributeError):
        pass
    found = shutil.which("ninja")
    if found is None:
        raise ToolchainError("ninja is not installed. Install it with `pip install ninja`.")
    return found


def _escape(path: str) -> str:
    return path.replace("$", "$$").replace(" ", "$ ").replace(":", "$:")


def _ninja_command(command: Sequence[str]) -> str:
    """Shell-quoted for /bin/sh (which ninja runs), then `$` doubled for ninja's own lexer."""
    line = shlex.join(command)
    if "\n" in line or "\r" in line:
        # A SpecError, not a CompileError: nothing was compiled, and the loader's handler of
        # compiler failures would replace this message with an empty compiler log.
        bad = next(arg for arg in command if "\n" in arg or "\r" in arg)
        raise SpecError(
            f"the build argument {bad!r} contains a line break, which no build tool can pass on. "
            "Rename the file or directory (or the cache directory), or drop the flag.",
            value=bad,
        )
    return line.replace("$", "$$")


def concrete(command: Sequence[str], directory: Path) -> list[str]:
    return [arg.replace(BUILD_DIR, str(directory)) for arg in command]


def render_ninja(steps: Sequence[BuildStep], directory: Path) -> str:
    lines = ["ninja_required_version = 1.7", ""]
    for i, step in enumerate(steps):
        lines += [
            f"rule step{i}",
            f"  command = {_ninja_command(concrete(step.command, directory))}",
            f"  description = {(step.description.splitlines() or [''])[0].replace('$', '$$')}",
            "",
            f"build {_escape(step.output)}: step{i} " + " ".join(_escape(p) for p in step.inputs),
            "",
        ]
    return "\n".join(lines)


def run_build(
    directory: Path, steps: Sequence[BuildStep], *, workers: int | None, verbose: bool, module: str
) -> tuple[str, float]:
    """Runs the steps; returns (combined log, seconds). Raises CompileError with the log on failure."""
    for step in steps:
        for workdir in step.workdirs:
            make_dir(directory / workdir, parents=True)
    atomic_write(directory / "build.ninja", render_ninja(steps, directory))
    jobs = workers if workers and workers > 0 else (os.cpu_count() or 1)
    command = [ninja_executable(), "-C", str(directory), f"-j{jobs}"]
    if verbose:
        command.append("-v")
    log.debug("running %s", shlex.join(command))
    started = time.monotonic()
    # Ninja stops the compilers it started when the runner stops it; diagnostics.compile_error
    # words a timeout for the user.
    job = supervise(lambda: ProcessJob(command, directory, verbose), module, module=module)
    text = job.output()
    elapsed = time.monotonic() - started
    atomic_write(directory / "build.log", text)
    if job.returncode != 0:
        raise CompileError(f"building module {module!r} failed", module=module, log=text, timed_out=False)
    return text, elapsed


def preprocess(
    directory: Path, units: Sequence[SourceUnit], command_of: PreprocessCommand, file_name: str
) -> str:
    """Unit ``file_name``'s preprocessed text, made in ``directory`` (the build's staging
    directory; scratch files are removed); CompileError on failure."""
    # Imported here: only a function made by a macro needs them.
    from ..codegen import render_kernel_unit
    from .diagnostics import first_error_index

    unit = next(u for u in units if u.display_name == file_name)
    scratch = directory / "preprocess"
    make_dir(scratch)
    source, output = f"preprocess/unit{unit.suffix}", "preprocess/unit.i"
    atomic_write(directory / source, render_kernel_unit(unit.display_name, unit.text, []))
    command = concrete(command_of(unit, source, output), directory)
    log.debug("reading %s after macro expansion: %s", file_name, " ".join(command))
    try:
        start = lambda: ProcessJob(command, directory)  # noqa: E731
        job = supervise(start, f"{file_name} (preprocessor)", command=command)
        if job.returncode != 0:
            text = job.output().strip()
            lines = text.splitlines() or ["(no output)"]
            first = lines[first_error_index(lines) or 0].strip()
            raise CompileError(f"the preprocessor failed on {file_name}: {first}", command=command, log=text)
        return (directory / output).read_text(errors="replace")
    except OSError as exc:
        raise CompileError(f"cannot run the preprocessor on {file_name}: {exc}", command=command) from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
