"""Turn a compiler log into an error that shows the user's first error first."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import CompileError
from .optional_headers import BE_WITHOUT_CHECKS, CHECKS_MACRO, COMPLEX_MACRO

_MAX_LINES = 25


def _is_error_line(line: str) -> bool:
    return ": error" in line or ": fatal error" in line or " error:" in line[:200]


def first_error_index(lines: list[str]) -> int | None:
    for i, line in enumerate(lines):
        if _is_error_line(line) and not line.startswith("FAILED:"):
            return i
    return None


def _compiler_lines(log_text: str) -> list[str]:
    """The compiler's own output, without ninja's progress, FAILED: banners and echoed commands."""
    lines = log_text.splitlines()
    return [
        line
        for before, line in zip(["", *lines], lines, strict=False)
        if line.strip()
        and not before.startswith("FAILED:")
        and not line.startswith(("FAILED:", "ninja:", "["))
    ]


# What compilers say of a name they do not know (g++, clang, nvcc's front end).
_UNKNOWN_NAME = (
    "was not declared", "is undefined", "does not name a type", "has not been declared",
    "is not a member of", "undeclared identifier", "no member named",
)  # fmt: skip

# The quoted name of an unknown-name error: g++'s ‘x’, clang's 'x', nvcc's "x".
_QUOTED = re.compile(r"[‘'\"]([A-Za-z_][A-Za-z0-9_:]*)[’'\"]")
# What <string> and <stdexcept> (kept out with the checking half) declare that kernels use.
_STD_CHECK_NAMES = frozenset(
    {"string", "to_string", "runtime_error", "exception", "invalid_argument", "logic_error",
     "out_of_range", "length_error", "overflow_error", "stoi", "stol", "stoll", "stod", "stof"}
)  # fmt: skip


def unknown_names(lines: Iterable[str]) -> list[tuple[str, str]]:
    """(name, its error line) for each error about a name the compiler does not know."""
    found = []
    for line in lines:
        if _is_error_line(line) and any(marker in line for marker in _UNKNOWN_NAME):
            for name in _QUOTED.findall(line):
                found.append((name.split("::")[-1] or name, line))
    return found


def _checks_name(name: str, line: str) -> bool:
    """Whether the checking half declares ``name``: a BE_ macro, a <string>/<stdexcept> name, BE::other."""
    in_be = "'BE'" in line or "‘BE’" in line or 'namespace "BE"' in line
    return name.startswith("BE_") or name in _STD_CHECK_NAMES or (in_be and name not in BE_WITHOUT_CHECKS)


# The optional parts of brainevent/common.h a build may leave out (build/optional_headers.py):
# what each holds, and whether an unknown name (with its error line) is one it declares.
_LEFT_OUT: dict[str, tuple[str, Callable[[str, str], bool]]] = {
    CHECKS_MACRO: (
        "the checking half of brainevent/common.h (BE_CHECK, BE::Error, the dispatch "
        "macros, BE::Scratch, and with them <string> and <stdexcept>)",
        _checks_name,
    ),
    COMPLEX_MACRO: (
        "<complex> (BE::complex64, the _FN dispatch macros' complex cases)",
        lambda name, _: "complex" in name.lower(),
    ),
}


def _missing_include_hint(names: Sequence[tuple[str, str]], lines: Sequence[str]) -> str:
    """BE:: used without brainevent/common.h: the compiler does not know namespace BE."""
    nvcc_style = any('name followed by "::" must be a class or namespace name' in line for line in lines)
    if not nvcc_style and not any(name == "BE" for name, _ in names):
        return ""
    return (
        "\n\nHint: the source uses BE:: but does not include brainevent/common.h. Add\n"
        '    #include "brainevent/common.h"\n'
        "at its top (for a CUDA module, in every unit that names BE::)."
    )


def _left_out_note(log_text: str, names: Sequence[tuple[str, str]]) -> str:
    """Why a name may be missing: an optional header was left out that a header from elsewhere needs."""
    # An unknown namespace BE itself means common.h is missing altogether, not a part of it.
    left_out = [
        (macro, what)
        for macro, (what, declares) in _LEFT_OUT.items()
        if f"-D{macro}=0" in log_text and any(declares(n, line) for n, line in names if n != "BE")
    ]
    if not left_out:
        return ""
    parts = "; ".join(f"{what} (-D{macro}=0)" for macro, what in left_out)
    fixes = " or ".join(f'"-D{macro}=1"' for macro, _ in left_out)
    return (
        f"\n\nNote: brainevent left out {parts}, because neither the unit nor the project "
        "headers it could read (the unit's directory, extra_include_paths, -I flags) need them. If a "
        "header from elsewhere does, pass its directory in extra_include_paths, or add "
        f"{fixes} to the compiler flags."
    )


# g++/clang: "file:7:5: error: ..."; nvcc: "file(7): error: ...".
_GCC = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?:\d+:)? (?:fatal )?error")
_NVCC = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\): (?:catastrophic )?error")


@dataclass(frozen=True)
class QuotedSource:
    """One source the build compiled: its display name, text and whether it was inline."""

    name: str
    text: str
    inline: bool


def quote_error_line(error_line: str, sources: Sequence[QuotedSource]) -> str:
    """The numbered lines around ``error_line`` (and the one before: a missing ``;``), or ""."""
    match = _GCC.match(error_line) or _NVCC.match(error_line)
    source = next((s for s in sources if match is not None and s.name == match["file"]), None)
    if match is None or source is None:
        return ""
    number = int(match["line"])
    lines = source.text.splitlines()
    if not 1 <= number <= len(lines):
        return ""
    where = "the inline source" if source.inline else source.name
    width = len(str(number))
    shown = [
        f"  {'>' if n == number else ' '} {n:>{width}} | {lines[n - 1]}"
        for n in range(max(1, number - 1), number + 1)
    ]
    return f"line {number} of {where}:\n" + "\n".join(shown)


def timeout_message(module: str, timeout: float | None) -> str:
    """The headline of a build stopped by BRAINEVENT_COMPILE_TIMEOUT (docs/troubleshooting.md)."""
    limit = f"{timeout:g} s" if timeout is not None else "the time limit"
    now = f" (now {timeout:g})" if timeout is not None else ""
    return (
        f"building module {module!r} timed out: it did not finish within {limit} and was "
        "stopped, with every compiler it started. A compiler may be hanging; if the build is just "
        f"slow, raise BRAINEVENT_COMPILE_TIMEOUT{now}, in seconds."
    )


def compile_error(
    module: str,
    log_text: str,
    log_path: Path,
    *,
    timed_out: bool = False,
    timeout_s: float | None = None,
    sources: Sequence[QuotedSource] = (),
) -> CompileError:
    """A CompileError: the first diagnostic (with the source line it points at), then the log path."""
    from .link_diagnostics import linker_causes  # a failed build only

    if timed_out:
        return CompileError(
            f"{timeout_message(module, timeout_s)}\nPartial build log: {log_path}",
            module=module,
            log_path=str(log_path),
            first_error=None,
            timeout_s=timeout_s,
        )
    lines = _compiler_lines(log_text)
    first = first_error_index(lines)
    causes = linker_causes(lines)
    if causes:  # a failed link: ld's own last line ("ld returned 1 exit status") says nothing
        excerpt = [*causes, "", *lines[:_MAX_LINES]]
        first_error = causes[0]
    elif first is not None:
        # Context lines that precede the first error ("In function ...") stay with it.
        start = first
        while start > 0 and lines[start - 1].rstrip().endswith(":") and first - start < 3:
            start -= 1
        excerpt = lines[start : start + _MAX_LINES]
        first_error = lines[first].strip()
    else:
        excerpt = lines[-_MAX_LINES:]
        first_error = None
    body = "\n".join(excerpt)
    headline = first_error or "the compiler failed without an error line (see the log)"
    if first_error is not None and "omp.h" in first_error and "No such file" in first_error:
        headline += " (the OpenMP header: install the compiler's OpenMP runtime, e.g. libgomp)"
    if quote := quote_error_line(first_error, sources) if first_error is not None else "":
        headline += f"\n{quote}"
    names = unknown_names(lines)
    hints = _missing_include_hint(names, lines) + _left_out_note(log_text, names)
    message = f"compiling module {module!r} failed: {headline}\n\n{body}{hints}"
    message += f"\n\nFull build log: {log_path}"
    return CompileError(message, module=module, log_path=str(log_path), first_error=first_error)
