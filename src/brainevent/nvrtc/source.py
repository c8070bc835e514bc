"""The user's CUDA source as given: inline text or a file, with its options and include dirs."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import KernelCallError

_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".cuda")
_INCLUDE_OPTIONS = ("-I", "--include-path")  # NVRTC's spellings: -Idir, -I dir, --include-path[=]dir


@dataclass(frozen=True)
class KernelSource:
    """The source's text, its file (absolute; None for an inline string), NVRTC options (include
    paths made absolute) and include directories (absolute). ``raw``: a file's bytes as read,
    which NVRTC compiles (``text`` decodes them for our own reading, any byte accepted)."""

    text: str
    path: str | None
    options: tuple[str, ...]
    include_dirs: tuple[str, ...]
    raw: bytes | None = None

    @property
    def data(self) -> bytes:
        """What NVRTC compiles and the key hashes."""
        return self.text.encode("utf-8", "surrogatepass") if self.raw is None else self.raw

    @classmethod
    def read(
        cls,
        source_or_path: str | os.PathLike[str],
        options: Sequence[str] = (),
        include_dirs: Sequence[str | os.PathLike[str]] = (),
    ) -> KernelSource:
        """A ``Path``, or a one-line string naming a file, is read; any other string is the source."""
        if isinstance(options, str):
            raise KernelCallError(
                f"options must be a list of NVRTC options, got the string {options!r}", value=options
            )
        dirs = tuple(os.path.abspath(os.fspath(d)) for d in include_dirs)
        text, path, raw = _read(source_or_path)
        return cls(text, path, _absolute_include_paths([str(o) for o in options]), dirs, raw)

    @property
    def where(self) -> str:
        """How errors name the source."""
        return self.path or "the inline source"

    @property
    def program_name(self) -> str:
        """NVRTC's name of the program, which its log repeats."""
        return self.path or "<inline>"

    def search_dirs(self) -> list[str]:
        """The file's directory (for quoted includes), then the include directories."""
        return ([os.path.dirname(self.path)] if self.path else []) + list(self.include_dirs)

    def includes_nothing(self) -> bool:
        """Whether NVRTC can open no file but its built-in headers: no ``include`` in the source
        (lines joined as the preprocessor joins them) nor in an option (``--pre-include``)."""
        text = self.text.replace("\\\r\n", "").replace("\\\n", "")
        return "include" not in text and not any("include" in o for o in self.options)

    def option_dirs(self) -> list[str]:
        """The include directories ``options`` name (made ``-I<absolute dir>`` when read)."""
        return [o[2:] for o in self.options if o.startswith("-I") and len(o) > 2]


def _absolute_include_paths(options: list[str]) -> tuple[str, ...]:
    """``options`` with each include directory (``-Idir``, ``-I dir``, ``--include-path[=]dir``)
    written ``-I<absolute dir>``: NVRTC runs elsewhere, and the key must not mean another
    directory when the working directory changes."""
    result: list[str] = []
    for option in options:
        if result and result[-1] in _INCLUDE_OPTIONS:
            result[-1] = "-I" + os.path.abspath(option)
        elif option.startswith(("-I", "--include-path=")) and option not in _INCLUDE_OPTIONS:
            result.append("-I" + os.path.abspath(option.removeprefix("-I").removeprefix("--include-path=")))
        else:
            result.append(option)
    return tuple(result)


def _read(source_or_path: str | os.PathLike[str]) -> tuple[str, str | None, bytes | None]:
    """``(text, absolute path, bytes read)``, or ``(text, None, None)`` for an inline source."""
    if isinstance(source_or_path, os.PathLike):
        candidate: str | None = os.fspath(source_or_path)
    elif isinstance(source_or_path, str):
        one_line = "\n" not in source_or_path and "__global__" not in source_or_path
        candidate = source_or_path.strip() if one_line else None
    else:
        raise KernelCallError(
            f"source_or_path must be CUDA source text or a path to a .cu file, got "
            f"{type(source_or_path).__name__}",
            type=type(source_or_path).__name__,
        )
    if candidate is None:
        return str(source_or_path), None, None
    path = Path(candidate).expanduser()
    if not path.is_file():
        looks_like_path = isinstance(source_or_path, os.PathLike) or candidate.endswith(_SUFFIXES)
        hint = "no such file" if looks_like_path else "neither a file nor CUDA source (no __global__ kernel)"
        raise KernelCallError(
            f"source_or_path {candidate!r}: {hint}. Pass the kernel's source text, or the path of a .cu file",
            value=candidate,
        )
    raw = path.read_bytes()  # compiled as it is: NVRTC, not Python, decides what its bytes mean
    return raw.decode("utf-8", "replace"), str(path.resolve()), raw
