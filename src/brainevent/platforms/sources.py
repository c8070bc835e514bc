"""What the plan stage writes for a platform to compile: a leaf the stages and platforms share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..load_options import SourceUnit


@dataclass(frozen=True)
class GeneratedSources:
    """What the plan stage wrote for a platform to compile (paths relative to the build directory).

    Each kernel unit carries its entry points' trampolines and FFI handlers. The call-frame
    decoder is shared by every module of a toolchain (stages/decoder.py): it is either
    already in the build directory as ``decoder`` (fetched from the cache), or ``decoder_source``
    names its translation unit, to compile into ``decoder`` in this build.
    """

    kernel_units: tuple[tuple[str, SourceUnit], ...]  # (generated unit, the user's unit it wraps)
    decoder: str  # the decoder object every link takes
    decoder_source: str | None  # None: `decoder` is in place already
    library: str  # the file the link writes

    @property
    def one_call(self) -> bool:
        """One source file and the decoder at hand: compile and link in one compiler call."""
        return len(self.kernel_units) == 1 and self.decoder_source is None
