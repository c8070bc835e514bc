"""Where brainevent's C++ headers live (``#include "brainevent/common.h"``)."""

from __future__ import annotations

import os
from pathlib import Path

INCLUDE_DIR = Path(os.path.join(os.path.dirname(__file__), "include"))  # one Path: a cache hit imports this


def include_dir() -> str:
    """The directory to put on the include path to use ``brainevent/common.h`` elsewhere."""
    return str(INCLUDE_DIR)
