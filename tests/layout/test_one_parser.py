"""Every ``BRAINEVENT_*`` variable is read through ``brainevent.config``, the one parser of their
values (a ConfigError for what it cannot parse). Code under ``src/`` that reads one from the
environment itself fails here, and every variable config declares is on the configuration page."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from brainevent import config

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "brainevent"
PARSER = PACKAGE / "config.py"


def _is_environment(node: ast.AST) -> bool:
    """``os.environ``, ``os.getenv`` or ``environ`` (imported from os)."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os":
        return node.attr in ("environ", "getenv", "environb", "getenvb")
    return isinstance(node, ast.Name) and node.id in ("environ", "getenv")


def _names_a_variable(node: ast.AST, constants: dict[str, str]) -> bool:
    """A statement that spells ``BRAINEVENT_...``, names a module constant holding it, or takes a
    declared variable's ``.name``."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
            spelled = inner.value
        elif isinstance(inner, ast.Name):
            spelled = constants.get(inner.id, "")
        elif isinstance(inner, ast.Attribute) and inner.attr == "name":
            spelled = "BRAINEVENT_" if "config" in ast.unparse(inner) else ""
        else:
            continue
        if spelled.startswith("BRAINEVENT_"):
            return True
    return False


def readers(source: str) -> list[int]:
    """Lines of statements in ``source`` that read a BRAINEVENT_* variable from the environment."""
    tree = ast.parse(source)
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name) and isinstance(node.value.value, str)
    }
    found = []
    for statement in ast.walk(tree):
        if isinstance(statement, ast.stmt):
            for part in _header(statement):
                if any(_is_environment(n) for n in ast.walk(part)) and _names_a_variable(part, constants):
                    found.append(statement.lineno)
    return sorted(set(found))


def _header(statement: ast.stmt) -> list[ast.AST]:
    """What a statement itself evaluates: a compound one's header, not its body (walked apart)."""
    if isinstance(statement, ast.If | ast.While):
        return [statement.test]
    if isinstance(statement, ast.For | ast.AsyncFor):
        return [statement.iter]
    if isinstance(statement, ast.With | ast.AsyncWith):
        return [item.context_expr for item in statement.items]
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Try | ast.Match):
        return []
    return [statement]


def test_no_brainevent_variable_is_read_outside_config() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != PARSER
        for line in readers(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "read BRAINEVENT_* variables through brainevent.config: " + ", ".join(found)


def test_the_check_sees_each_way_of_reading() -> None:
    for text in (
        'x = os.environ.get("BRAINEVENT_DEBUG")',
        'x = os.getenv("BRAINEVENT_DEBUG", "0")',
        'x = os.environ["BRAINEVENT_DEBUG"]',
        'VAR = "BRAINEVENT_FULL_TRACEBACK"\nif os.environ.get(VAR, "").strip():\n    pass',
        "x = os.environ.get(config.CXX.name)",
        'x = [k for k in os.environ if k.startswith("BRAINEVENT_")]',
    ):
        assert readers(text), text
    assert readers('x = os.environ.get("XLA_FLAGS", "")') == []
    assert readers('raise ValueError("set BRAINEVENT_CUDA_ARCH")') == []


def test_every_variable_config_declares_is_on_the_configuration_page() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `(BRAINEVENT_[A-Z_]+)` \|", page, re.MULTILINE))
    assert documented == {v.name for v in config.ALL}
