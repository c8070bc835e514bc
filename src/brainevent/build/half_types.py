"""Decide whether a ``.cu`` unit needs CUDA's half-precision headers.

``brainevent/half.h`` includes ``<cuda_fp16.h>`` and ``<cuda_bf16.h>`` under nvcc, as
brainevent 0.2.1 did, which costs about half a second per compile. A unit that never
names a half type, a half intrinsic or a dispatch macro with half cases is compiled
with ``-DBE_CUDA_HALF_TYPES=0`` instead. The test reads the identifiers of the code and
of its preprocessor lines (not comments), so a false positive only costs that half
second; a unit (or one of its project headers) that mentions ``BE_CUDA_HALF_TYPES``
itself is left alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from ..headers import INCLUDE_DIR
from ..spec.cxx_lexer import lex
from .includes import header_closure

MACRO = "BE_CUDA_HALF_TYPES"

_NAMES = frozenset({"float16_t", "bfloat16_t", "BE_DISPATCH_ALL"})
# Substrings of the names cuda_fp16.h / cuda_bf16.h declare (__half, __float2half,
# __nv_bfloat16, __bfloat162float, CUDART_ZERO_FP16, ...) and of our half dispatch macro.
_PARTS = ("half", "bfloat16", "bf16", "fp16")
# Half math functions without any of those parts (hsqrt, h2exp, __hadd, __hmul, ...).
_MATH = frozenset(
    {"habs", "hceil", "hcos", "hexp", "hexp10", "hexp2", "hfloor", "hlog", "hlog10", "hlog2",
     "hrcp", "hrint", "hrsqrt", "hsin", "hsqrt", "htanh", "htrunc"}
)  # fmt: skip


def names_half_type(word: str) -> bool:
    """True for an identifier that only compiles with CUDA's half headers in."""
    if word in _NAMES or word in _MATH:
        return True
    low = word.lower()
    if any(part in low for part in _PARTS):
        return True
    if word.startswith("__h") and word != "__host__":
        return True
    return word.startswith("h2") and word[2:].isalpha()


def needs_half_headers(texts: Iterable[str]) -> bool:
    for text in texts:
        if MACRO in text:
            return True  # the user decides; never contradict a define of theirs
        # Code and the bodies of directives (``#define MY_DISPATCH BE_DISPATCH_ALL``);
        # comments are left out, where "half" is just a word.
        for part in (text, *_directives(text)):
            if any(tok.kind == "ident" and names_half_type(tok.text) for tok in lex(part).tokens):
                return True
    return False


def _directives(text: str) -> Iterable[str]:
    """The text after ``#`` of each preprocessor line, continuation lines joined."""
    lines = iter(text.splitlines())
    for line in lines:
        stripped = line.lstrip()
        if not stripped.startswith("#"):
            continue
        body = stripped[1:]
        while body.endswith("\\"):
            body = body[:-1] + " " + next(lines, "")
        yield body


def half_type_flags(
    text: str, directory: Path | None, search: Sequence[Path], extra_cflags: Sequence[str]
) -> list[str]:
    """``["-DBE_CUDA_HALF_TYPES=0"]`` for a unit that does not need the half headers, else []."""
    if any(MACRO in flag for flag in extra_cflags):
        return []
    dirs = list(search) + ([directory] if directory is not None else [])
    headers = header_closure([(text, directory)], dirs, skip_dirs=[INCLUDE_DIR])
    texts = [text] + [Path(path).read_text(errors="replace") for path in headers]
    return [] if needs_half_headers(texts) else [f"-D{MACRO}=0"]
