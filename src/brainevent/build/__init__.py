"""Build execution: the ninja graph, compiler invocation, diagnostics."""

from .diagnostics import compile_error
from .ninja import BuildStep, run_build

__all__ = ["BuildStep", "compile_error", "run_build"]
