"""Linker output in the user's terms: one headline per cause, with the user's file names.

The linker names generated objects and units (``k0.o``, ``k0_kernels.cudafe1.cpp``) and ends
with ``ld returned 1 exit status``, which says nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# k<i>.o, or k<i>_<stem>.<ext> as the compiler saw it (nvcc's kept k<i>_<stem>.cudafe1.cpp too),
# never part of a longer path or name.
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


def user_file_names(log_text: str, units: Sequence[str]) -> str:
    """``log_text`` with generated unit ``k<i>``'s names replaced by ``units[i]``."""

    def name(match: re.Match[str]) -> str:
        index = int(match.group(1))
        return units[index] if index < len(units) else match.group(0)

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
