"""Every file and directory brainevent writes goes through ``brainevent.fileio`` (written beside
and renamed, never through a link, modes exact whatever the umask). Code under ``src/`` that
writes any other way fails here, wherever it stands."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "brainevent"
WRITER = PACKAGE / "fileio.py"

# Methods and functions that create or write a file, a directory or a link.
_WRITING_METHODS = {
    "write_text",
    "write_bytes",
    "mkdir",
    "makedirs",
    "touch",
    "symlink_to",
    "hardlink_to",
    "mkfifo",
    "mknod",
    "extract",
    "extractall",
}
_WRITING_OS = {"link", "symlink", "truncate"}
_WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"}

# (file relative to src/brainevent, what it calls): writes that no call of ours makes (a
# compiler or ninja writing its outputs is a subprocess, which this test does not see).
ALLOWED: dict[tuple[str, str], str] = {}


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "?"


def _open_mode(call: ast.Call, position: int) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == "mode":
            return keyword.value
    return call.args[position] if len(call.args) > position else None


def _writes(call: ast.Call) -> bool:
    name = _dotted(call.func)
    attr = name.rpartition(".")[2]
    if isinstance(call.func, ast.Attribute) and attr in _WRITING_METHODS:
        return True
    if name.startswith("shutil.") and ("copy" in attr or attr == "move"):
        return True
    if name in {f"os.{n}" for n in _WRITING_OS}:
        return True
    if name in ("open", "io.open", "os.fdopen", "builtins.open"):
        mode = _open_mode(call, 1)
        if mode is None:
            return False  # read
        return not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)) or bool(
            set(mode.value) & set("wax+")
        )
    if name == "os.open" and len(call.args) > 1:
        if _dotted(call.args[0]) == "os.devnull":
            return False  # the null device: nothing is written
        return bool({n.attr for n in ast.walk(call.args[1]) if isinstance(n, ast.Attribute)} & _WRITE_FLAGS)
    return False


def other_writers() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == WRITER:
            continue
        relative = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _writes(node):
                what = _dotted(node.func)
                if (relative, what) not in ALLOWED:
                    found.append(f"{relative}:{node.lineno}: {what}(...)")
    return found


def test_every_file_is_written_through_the_one_writer() -> None:
    found = other_writers()
    assert not found, "write through brainevent.fileio (atomic_write, make_dir, copy_file):\n" + "\n".join(
        found
    )


def test_the_check_sees_each_way_of_writing(tmp_path: Path) -> None:
    """The scan itself: each of these writes is found, and reading is not."""
    writes = [
        "p.write_text('x')",
        "p.write_bytes(b'x')",
        "p.mkdir()",
        "os.makedirs(d)",
        "open(p, 'w')",
        "open(p, mode='ab')",
        "open(p, m)",
        "os.fdopen(fd, 'wb')",
        "os.open(p, os.O_WRONLY | os.O_CREAT)",
        "shutil.copyfile(a, b)",
        "shutil.copytree(a, b)",
        "os.symlink(a, b)",
        "tar.extractall(d)",
    ]
    reads = ["open(p)", "open(p, 'rb')", "os.open(p, os.O_RDONLY)", "p.read_text()", "d.copy()"]
    reads.append("os.open(os.devnull, os.O_WRONLY)")
    for text, expected in [*((w, True) for w in writes), *((r, False) for r in reads)]:
        call = ast.parse(text).body[0].value  # type: ignore[attr-defined]
        assert _writes(call) is expected, text
