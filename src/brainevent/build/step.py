"""One step of a build: a command that turns inputs into an output."""

from __future__ import annotations

from typing import NamedTuple

# Commands name the build directory through this token, so that they (and the object
# cache keys made from them) do not depend on where a build happens to run.
BUILD_DIR = "@BUILD_DIR@"


class BuildStep(NamedTuple):  # a NamedTuple: platforms/base.py is imported on cache hits
    output: str  # path relative to the build directory
    inputs: tuple[str, ...]
    command: tuple[str, ...]  # an argument list; ninja gets it shell-quoted
    description: str
    # Where the compiler writes the files it read (-MD -MF), relative to the build directory.
    depfile: str | None = None
    # Directories (relative to the build directory) the command writes into: made before the build.
    workdirs: tuple[str, ...] = ()
