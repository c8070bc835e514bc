"""One step of a build: a command that turns inputs into an output."""

from __future__ import annotations

from typing import NamedTuple


class BuildStep(NamedTuple):
    output: str  # path relative to the build directory
    inputs: tuple[str, ...]
    command: tuple[str, ...]  # an argument list; ninja gets it shell-quoted
    description: str
    # Where the compiler writes the files it read (-MD -MF), relative to the build directory.
    depfile: str | None = None
    # Directories (relative to the build directory) the command writes into: made before the build.
    workdirs: tuple[str, ...] = ()
