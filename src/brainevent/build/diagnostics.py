"""Turn a compiler log into an error that shows the user's first error first, and linker output
into one headline per cause, in the user's file names."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import CompileError
from .optional_headers import BE_WITHOUT_CHECKS, CHECKS_MACRO, COMPLEX_MACRO, names_std_complex

if TYPE_CHECKING:
    from ..load_options import SourceUnit

_MAX_LINES = 25


def _is_error_line(line: str) -> bool:
    return ": error" in line or ": fatal error" in line or " error:" in line[:200]


def first_error_index(lines: list[str]) -> int | None:
    return next(
        (i for i, line in enumerate(lines) if _is_error_line(line) and not line.startswith("FAILED:")), None
    )


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


# Each optional part of common.h a build may leave out: what it holds, and whether it declares a name.
_LEFT_OUT: dict[str, tuple[str, Callable[[str, str], bool]]] = {
    CHECKS_MACRO: (
        "the checking half of brainevent/common.h (BE_CHECK, BE::Error, the dispatch "
        "macros, BE::Scratch, and with them <string> and <stdexcept>)",
        _checks_name,
    ),
    COMPLEX_MACRO: (
        "<complex> (BE::complex64, the _FN dispatch macros' complex cases)",
        lambda name, _: names_std_complex(name),
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


def quote_error_line(error_line: str, sources: Sequence[SourceUnit]) -> str:
    """The numbered lines around ``error_line`` (and the one before: a missing ``;``), or ""."""
    match = _GCC.match(error_line) or _NVCC.match(error_line)
    source = next((s for s in sources if match is not None and s.display_name == match["file"]), None)
    if match is None or source is None:
        return ""
    number = int(match["line"])
    lines = source.text.splitlines()
    if not 1 <= number <= len(lines):
        return ""
    where = "the inline source" if source.directory is None else source.display_name
    return f"line {number} of {where}:\n" + numbered_lines(lines, number)


def numbered_lines(lines: Sequence[str], number: int, after: int = 0) -> str:
    """Lines ``number - 1`` to ``number + after`` of ``lines`` (1-based), numbered, ``number`` marked."""
    shown = range(max(1, number - 1), min(number + after, len(lines)) + 1)
    width = len(str(shown[-1]))
    return "\n".join(f"  {'>' if n == number else ' '} {n:>{width}} | {lines[n - 1]}" for n in shown)


def compile_error(
    module: str,
    log_text: str,
    log_path: Path,
    *,
    timed_out: bool = False,
    timeout_s: float | None = None,
    sources: Sequence[SourceUnit] = (),
) -> CompileError:
    """A CompileError: the first diagnostic (with the source line it points at), then the log path."""
    if timed_out:  # the headline docs/troubleshooting.md quotes
        limit = f"{timeout_s:g} s" if timeout_s is not None else "the time limit"
        now = f" (now {timeout_s:g})" if timeout_s is not None else ""
        return CompileError(
            f"building module {module!r} timed out: it did not finish within {limit} and was "
            "stopped, with every compiler it started. A compiler may be hanging; if the build is just "
            f"slow, raise BRAINEVENT_COMPILE_TIMEOUT{now}, in seconds.\nPartial build log: {log_path}",
            module=module,
            log_path=str(log_path),
            first_error=None,
            timeout_s=timeout_s,
        )
    lines = _compiler_lines(log_text)
    first = first_error_index(lines)
    causes = linker_causes(lines)
    if causes:  # a failed link: ld's own last line ("ld returned 1 exit status") says nothing
        excerpt = [*causes[1:], "", *lines[:_MAX_LINES]] if len(causes) > 1 else lines[:_MAX_LINES]
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


# The linker names generated objects and units: k<i>.o, k<i>_<stem>.<ext> as the compiler saw it
# (nvcc's kept k<i>_<stem>.cudafe1.cpp too), never part of a longer path or name.
_EDGE = r"(?<![\w/.\-])"
_OBJECT_AND_UNIT = re.compile(_EDGE + r"k(\d+)\.o:(?:src/)?k\1_\w*(?:\.cudafe1)?\.(?:cpp|cu|c)\b")
_OBJECT = re.compile(_EDGE + r"k(\d+)\.o\b")
_UNIT = re.compile(_EDGE + r"(?:src/)?k(\d+)_\w*(?:\.cudafe1)?\.(?:cpp|cu|c)\b")
_BINDING = re.compile(_EDGE + r"binding\.o\b")

_IN_FUNCTION = re.compile(r"in function [`'](?P<function>.+)':$")
_UNDEFINED = re.compile(r"^(?P<where>.+?):(?:\(.*?\)|\d+): undefined reference to [`'](?P<symbol>.+)'$")
_UNDEFINED_SYMBOL = re.compile(r"undefined symbol: (?P<symbol>\S+)")
_MULTIPLE = re.compile(
    r"^(?P<where>.+?):(?:\(.*?\)|\d+): multiple definition of [`'](?P<symbol>.+?)'; "
    r"(?P<first>.+?):(?:\(.*?\)|\d+): first defined here"
)
_MISSING_LIBRARY = re.compile(r"cannot find -l(?P<library>[\w.+\-]+)")
_GENERATED_PREFIX = "be_entry_"
_OPENMP_LIBRARIES = ("gomp", "omp", "iomp5")
_OPENMP_PREFIXES = ("omp_", "GOMP_", "__kmpc_")  # the OpenMP API, GCC's and LLVM's runtime entries
_LINKER_PREFIX = re.compile(r"^(?:/\S*/)?(?:ld|ld\.\w+|collect2)(?:: warning)?: ")


def user_file_names(log_text: str, units: Sequence[tuple[str, str]]) -> str:
    """``log_text`` with the names of generated unit ``k<i>`` (``units[i]``: its path, the user's
    name), its object's and the binding's (a compiler's closing line and the linker name them)
    replaced by the user's."""
    for path, user_name in units:
        log_text = log_text.replace(path, user_name)

    def name(match: re.Match[str]) -> str:  # the linker's names: objects (k0.o), units without a directory
        index = int(match.group(1))
        return units[index][1] if index < len(units) else match.group(0)

    log_text = _OBJECT_AND_UNIT.sub(name, log_text)
    log_text = _UNIT.sub(name, log_text)
    log_text = _OBJECT.sub(name, log_text)
    return _BINDING.sub("the generated binding", log_text)


def linker_causes(lines: Sequence[str]) -> list[str]:
    """One line per distinct link failure, in the linker's order; [] when none is understood."""
    causes: list[str] = []
    undefined: dict[str, list[str]] = {}  # symbol -> the places that use it
    function = ""
    for raw in lines:
        line = _LINKER_PREFIX.sub("", raw.strip())
        if found := _IN_FUNCTION.search(line):
            function = found["function"]
            continue
        if found := _UNDEFINED.match(line):
            generated = function.startswith(_GENERATED_PREFIX)  # our trampoline calls the user's code
            place = found["where"] + (f" (in {function})" if function and not generated else "")
            causes.append(found["symbol"])  # a placeholder, filled in below (its first place kept)
            known = undefined.setdefault(found["symbol"], [])
            if any(p.startswith(found["where"]) for p in known):
                # One file once: the generated caller's copy (the user's function inlined
                # into it) gives way to the place that names the user's function.
                if generated:
                    continue
                known[:] = [p for p in known if p != found["where"]]
            if place not in known:
                known.append(place)
        elif found := _MULTIPLE.match(line):
            places = f"{found['where']} and {found['first']}"
            if found["where"] == found["first"]:
                places = f"{found['where']} (twice: is it included in two objects?)"
            causes.append(
                f"multiple definition of '{found['symbol']}': defined in {places}. A function "
                "defined in a header included by several files needs `inline` (or `static`)."
            )
        elif found := _MISSING_LIBRARY.search(line):
            causes.append(_missing_library(found["library"]))
        elif found := _UNDEFINED_SYMBOL.search(line):
            causes.append(f"undefined symbol '{found['symbol']}'")
    return [_undefined(c, undefined[c]) if c in undefined else c for c in dict.fromkeys(causes)]


def _undefined(symbol: str, places: list[str]) -> str:
    where = "; ".join(places[:3]) + (f"; and {len(places) - 3} more" if len(places) > 3 else "")
    if symbol.startswith(_OPENMP_PREFIXES):
        fix = (
            "It is OpenMP's: pass openmp=True to the loader (it compiles and links with -fopenmp); "
            "see docs/existing-code.md#openmp."
        )
    else:
        fix = (
            "Define it in one of the module's files, or link the library that defines it "
            "(extra_ldflags, e.g. ['-lname'])."
        )
    return f"undefined symbol '{symbol}', used in {where}. {fix}"


def _missing_library(library: str) -> str:
    if library in _OPENMP_LIBRARIES:
        return (
            f"the OpenMP runtime library lib{library} was not found by the linker (-l{library}). "
            "Install the compiler's OpenMP runtime (GCC: libgomp, e.g. `apt-get install libgomp1` "
            "or conda's `libgomp`; Clang: libomp) or build without openmp=True."
        )
    return (
        f"the linker cannot find library lib{library} (-l{library}): install it, or add its "
        "directory to extra_ldflags with -L"
    )
