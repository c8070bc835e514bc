"""Which optional parts of common.h a unit needs: one that names nothing a group declares (in its code,
directives and project headers; a false positive only costs compile time) gets ``-D<macro>=0``. A
unit, header or flag that mentions the macro is left alone (docs/architecture.md, "The generated code")."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from ..headers import INCLUDE_DIR
from ..spec.cxx_lexer import Token, lex
from .includes import header_texts

HALF_MACRO = "BE_CUDA_HALF_TYPES"
COMPLEX_MACRO = "BE_STD_COMPLEX"
CHECKS_MACRO = "BE_CHECK_HEADERS"

# What brainevent/common.h offers without its checking half (BE_CHECK_HEADERS=0): dtype.h,
# half.h and tensor.h. A unit naming anything else of namespace BE keeps the whole header.
BE_WITHOUT_CHECKS = frozenset(
    {"Tensor", "DType", "DTypeOf", "dtype_of", "element_size", "dtype_size", "dtype_name",
     "float16", "bfloat16", "float16_t", "bfloat16_t", "complex64_t", "complex128_t"}
)  # fmt: skip

_HALF_NAMES = frozenset({"float16_t", "bfloat16_t", "BE_DISPATCH_ALL"})
# Substrings of the names cuda_fp16.h / cuda_bf16.h declare (__half, __float2half,
# __nv_bfloat16, __bfloat162float, CUDART_ZERO_FP16, ...) and of our half dispatch macro.
_HALF_PARTS = ("half", "bfloat16", "bf16", "fp16")
# Half math functions without any of those parts (hsqrt, h2exp, __hadd, __hmul, ...).
_HALF_MATH = frozenset(
    {"habs", "hceil", "hcos", "hexp", "hexp10", "hexp2", "hfloor", "hlog", "hlog10", "hlog2",
     "hrcp", "hrint", "hrsqrt", "hsin", "hsqrt", "htanh", "htrunc"}
)  # fmt: skip
# Functions of <complex> whose names say nothing of it, when called as std::name.
_STD_COMPLEX_FUNCTIONS = frozenset({"polar", "conj", "proj", "real", "imag", "arg", "norm"})


def names_half_type(word: str) -> bool:
    """True for an identifier that only compiles with CUDA's half headers in."""
    if word in _HALF_NAMES or word in _HALF_MATH:
        return True
    low = word.lower()
    if any(part in low for part in _HALF_PARTS):
        return True
    if word.startswith("__h") and word != "__host__":
        return True
    return word.startswith("h2") and word[2:].isalpha()


def names_std_complex(word: str) -> bool:
    """True for an identifier that may need ``<complex>`` (BE::complex64_t is a harmless false positive)."""
    return "complex" in word.lower()


def _complex_in(tokens: Sequence[Token]) -> bool:
    for i, tok in enumerate(tokens):
        if tok.kind != "ident":
            continue
        if names_std_complex(tok.text):
            return True
        std_call = i >= 2 and tokens[i - 1].text == "::" and tokens[i - 2].text == "std"
        if std_call and tok.text in _STD_COMPLEX_FUNCTIONS:
            return True
    return False


def _checks_in(tokens: Sequence[Token]) -> bool:
    """Whether code may need common.h's checking half (any ``std``: it may rely on what <string> includes)."""
    for i, tok in enumerate(tokens):
        if tok.kind != "ident":
            continue
        if tok.text == "std" or tok.text.startswith("BE_"):
            return True
        if tok.text != "BE":
            continue
        if i > 0 and tokens[i - 1].text == "namespace":
            return True
        if i + 2 >= len(tokens) or tokens[i + 1].text != "::":
            return True  # BE on its own (a macro argument, a using-declaration): keep it all
        if tokens[i + 2].text not in BE_WITHOUT_CHECKS:
            return True
    return False


# Each optional group's macro, and whether a unit's tokens need the group. The half types are
# CUDA's alone; the order is that of the flags.
_FOUND_IN: dict[str, Callable[[Sequence[Token]], bool]] = {
    COMPLEX_MACRO: _complex_in,
    CHECKS_MACRO: _checks_in,
    HALF_MACRO: lambda tokens: any(tok.kind == "ident" and names_half_type(tok.text) for tok in tokens),
}


def _lexed(texts: Iterable[str]) -> list[tuple[str, list[Sequence[Token]]]]:
    """Each text with the tokens of its code and of each directive's body (comments, mere words, left out)."""
    return [(text, [lex(part).tokens for part in (text, *_directives(text))]) for text in texts]


def _needs(lexed: Sequence[tuple[str, list[Sequence[Token]]]], macro: str) -> bool:
    # A text that names the macro: the user decides; never contradict a define of theirs.
    return any(macro in text or any(map(_FOUND_IN[macro], parts)) for text, parts in lexed)


def needs_headers(macro: str, texts: Iterable[str]) -> bool:
    """Whether ``texts`` may need the optional headers ``macro`` leaves out."""
    return _needs(_lexed(texts), macro)


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


def optional_header_flags(
    text: str, directory: Path | None, search: Sequence[Path], extra_cflags: Sequence[str], *, cuda: bool
) -> list[str]:
    """The ``-D<macro>=0`` flags that leave out the optional headers a unit does not need
    (``search``: the include directories, ``-I`` flags' too; a macro in ``extra_cflags`` is the user's)."""
    macros = [m for m in _FOUND_IN if cuda or m != HALF_MACRO]
    macros = [m for m in macros if not any(m in flag for flag in extra_cflags)]
    if not macros:
        return []
    dirs = [*search] + ([directory] if directory is not None else [])
    lexed = _lexed([text, *header_texts([(text, directory)], dirs, skip_dirs=[INCLUDE_DIR]).values()])
    return [f"-D{macro}=0" for macro in macros if not _needs(lexed, macro)]
