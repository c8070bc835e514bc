"""Turn a compiler log into an error that shows the user's first error first."""

from __future__ import annotations

from pathlib import Path

from ..errors import CompileError
from .link_diagnostics import linker_causes

_MAX_LINES = 25


def _is_error_line(line: str) -> bool:
    return ": error" in line or ": fatal error" in line or " error:" in line[:200]


def first_error_index(lines: list[str]) -> int | None:
    for i, line in enumerate(lines):
        if _is_error_line(line) and not line.startswith("FAILED:"):
            return i
    return None


def _compiler_lines(log_text: str) -> list[str]:
    """The compiler's own output: ninja's progress, FAILED: banners and command echoes dropped."""
    out: list[str] = []
    skip_next = False
    for line in log_text.splitlines():
        if skip_next:  # the command ninja echoes after "FAILED: <output>"
            skip_next = False
            continue
        if line.startswith("FAILED:"):
            skip_next = True
            continue
        if not line.strip() or line.startswith(("ninja:", "[")):
            continue
        out.append(line)
    return out


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
) -> CompileError:
    """A CompileError whose message starts with the first diagnostic and ends with the log path."""
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
    message = f"compiling module {module!r} failed: {headline}\n\n{body}\n\nFull build log: {log_path}"
    return CompileError(message, module=module, log_path=str(log_path), first_error=first_error)
