"""Every compiler runs through the one compile runner (build/runner.py): the timeout, Ctrl-C and
the cleanup after either hold for each. A module that starts a process some other way, or binds
NVRTC outside its worker process, fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "brainevent"
_STARTS = {"Popen", "run", "call", "check_call", "check_output", "system", "spawnv", "execv"}
# Modules that start processes which compile nothing, and why.
_NOT_COMPILES = {
    "build/runner.py": "the runner itself",
    "nvrtc/process.py": "starts NVRTC's worker; each compile in it is a job of the runner",
    "toolchain/nvcc.py": "asks nvcc for its version",
    "toolchain/host_compat.py": "asks the host compiler for its predefined macros",
    "doctor.py": "loads cached libraries in a child to see that they load",
}


def _starts_a_process(node: ast.AST) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    owner = getattr(getattr(func, "value", None), "id", None)
    return isinstance(func, ast.Attribute) and owner in ("subprocess", "os") and func.attr in _STARTS


def test_compilers_start_only_through_the_runner() -> None:
    found = []
    for path in PACKAGE.rglob("*.py"):
        name = path.relative_to(PACKAGE).as_posix()
        calls = [n.lineno for n in ast.walk(ast.parse(path.read_text())) if _starts_a_process(n)]
        if calls and name not in _NOT_COMPILES:
            found.append(f"{name}: lines {calls}")
    assert found == [], "run a compiler through build.runner.supervise"


def test_nvrtc_is_bound_only_in_its_worker_process() -> None:
    """A cache hit never loads NVRTC: nothing this process imports binds it."""
    binders = [
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if "nvrtcCompileProgram" in path.read_text() or 'load_nvidia_dynamic_lib("nvrtc")' in path.read_text()
    ]
    assert binders == ["nvrtc/worker.py"]
    imports = {
        alias.name.split(".")[0]
        for node in ast.walk(ast.parse((PACKAGE / "nvrtc" / "worker.py").read_text()))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])
    }
    import sys

    assert imports <= set(sys.stdlib_module_names) | {"__future__"}, (
        "the worker imports the standard library only"
    )
