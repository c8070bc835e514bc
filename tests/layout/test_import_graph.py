"""The import graph of src/brainevent has no cycles, and its packages stand on floors.

Between files every import statement counts, wherever it stands (module top, inside a function,
under ``if TYPE_CHECKING:``): a lazy import that closes a circle still ties two modules into one
unit that cannot be understood, tested or moved alone. Edges go to the module an import
names (``from .cache import store`` names ``cache/store.py``; ``from .cache import Entry``
names ``cache/__init__.py``), as a reader of the text sees them.

Between packages (a top-level module is a package of its own) the imports a module makes when
it is imported, at its top, form no circle, and ``FLOORS`` says which package stands on which:
an import from a lower floor to a higher one (of any kind) is the exception, at most
``UPWARD_LIMIT`` of them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "brainevent"


# The floors of the house, lowest first: a package reads its own floor and the ones below.
FLOORS: tuple[tuple[str, ...], ...] = (
    # what everything reads: errors, files, the environment, the platform table, ownership checks
    ("errors", "logs", "fileio", "_version", "environment", "headers", "platform_table", "lazy_exports",
     "trust", "config", "backends"),
    ("vocabulary", "spec", "codegen", "calls"),  # what a kernel's parameters are, and how a call passes them
    ("toolchain",),  # compilers found and probed
    ("load_options",),  # the loaders' one option table
    ("build",),  # compile steps and their runner
    ("cache",),  # the store: keys, manifests, entries, bundles
    ("platforms",),  # what differs per platform
    ("runtime",),  # compiled modules registered with JAX
    ("distributed",),  # one build for a job
    ("stages",),  # the load pipeline
    ("loaders",),  # the public loaders
    ("launchers",),  # launchers shared by kernel kinds
    ("numba_bridge", "nvrtc", "triton_bridge", "custom_kernel"),  # the kernel kinds, side by side
    ("bundle", "cache_control", "cuda_graphs", "ide", "doctor", "demo", "cli", "__main__", "brainevent"),
)  # fmt: skip
UPWARD_LIMIT = 3


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(name: str, path: Path, known: dict[str, Path], tree: ast.AST | None = None) -> set[str]:
    is_package = path.name == "__init__.py"
    here = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree or ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            for alias in node.names:
                submodule = f"{origin}.{alias.name}"
                found.add(submodule if submodule in known else origin)
    edges = set()
    for target in found:
        # "import brainevent.cache.store" or a name inside a module: the longest known prefix
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            edges.add(target)
    return edges


def unresolved_imports() -> list[str]:
    """Imports of brainevent modules that do not exist (a lazy import escapes mypy's check)."""
    known = _modules()
    missing = []
    for name, path in known.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = here.split(".")
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("brainevent"):
                origin = node.module or ""
            else:
                continue
            if origin not in known:
                missing.append(f"{name}:{node.lineno}: {origin}")
    return missing


def import_graph() -> dict[str, set[str]]:
    known = _modules()
    return {name: _imports(name, path, known) for name, path in known.items()}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iteratively: the components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def layers(graph: dict[str, set[str]]) -> int:
    """The longest chain of imports (floors of the house), for an acyclic graph."""
    depth: dict[str, int] = {}

    def floor(node: str) -> int:
        if node not in depth:
            depth[node] = 1 + max((floor(child) for child in graph[node]), default=0)
        return depth[node]

    return max(floor(node) for node in graph)


def test_the_reader_sees_the_edges_it_should() -> None:
    graph = import_graph()
    assert "brainevent.errors" in graph["brainevent.config"] or "brainevent.errors" in str(graph)
    assert graph["brainevent"], "the package's __init__ imports its public names"


def test_a_circle_is_found_when_there_is_one() -> None:
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_every_import_of_ours_names_a_module_that_exists() -> None:
    assert unresolved_imports() == []


def test_src_has_no_import_cycles() -> None:
    graph = import_graph()
    circles = strongly_connected(graph)
    assert not circles, "import cycles in src/brainevent:\n" + "\n".join(" <-> ".join(c) for c in circles)
    assert layers(graph) > 1


def _package(module: str) -> str:
    """``brainevent.cache.store`` -> ``cache``; a top-level module is its own; the root ``brainevent``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _top_imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules ``name`` imports when it is imported: at its top (under ``try``/``if`` too),
    not in a function nor under ``if TYPE_CHECKING:``."""
    body: list[ast.stmt] = list(ast.parse(path.read_text(encoding="utf-8")).body)
    kept: list[ast.stmt] = []
    while body:
        node = body.pop(0)
        if isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
            body[:0] = [*node.body, *node.orelse]
        elif isinstance(node, ast.Try):
            body[:0] = [
                *node.body,
                *(s for h in node.handlers for s in h.body),
                *node.orelse,
                *node.finalbody,
            ]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            kept.append(node)
    return _imports(name, path, known, ast.Module(body=kept, type_ignores=[]))


def package_graph() -> dict[str, set[str]]:
    """{package: the packages its modules import at their top}."""
    known = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        edges = graph.setdefault(_package(name), set())
        edges.update(_package(t) for t in _top_imports(name, path, known) if _package(t) != _package(name))
    return graph


def upward_imports() -> list[str]:
    """Every import (of any kind) from a package to one on a higher floor."""
    floor = {package: i for i, packages in enumerate(FLOORS) for package in packages}
    return sorted(
        f"{a} -> {b}"
        for a, targets in import_graph().items()
        for b in targets
        if floor[_package(b)] > floor[_package(a)]
    )


def test_every_package_stands_on_one_floor() -> None:
    packages = {_package(name) for name in _modules()}
    placed = [p for floor in FLOORS for p in floor]
    assert sorted(set(placed) ^ packages) == [], "add a new package to FLOORS (or drop a gone one)"
    assert len(placed) == len(set(placed))


def test_packages_import_each_other_in_no_circle() -> None:
    circles = strongly_connected(package_graph())
    assert not circles, "packages in one import circle:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_few_imports_run_up_the_floors() -> None:
    upward = upward_imports()
    assert len(upward) <= UPWARD_LIMIT, "imports from a lower floor to a higher one:\n" + "\n".join(upward)
