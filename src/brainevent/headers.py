"""Where brainevent's C++ headers live (``#include "brainevent/common.h"``)."""

from __future__ import annotations

from pathlib import Path

INCLUDE_DIR = Path(__file__).parent / "include"


def include_dir() -> str:
    """The directory to put on the include path to use ``brainevent/common.h`` elsewhere."""
    return str(INCLUDE_DIR)
