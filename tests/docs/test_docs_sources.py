"""Lists the documentation keeps by hand, checked against the one source each comes from: the
tutorials' loader parameters (the loaders' signatures and the option table), the command
lists (the CLI's command table), the extras table of the install page (pyproject.toml), the
README's and the home page's lists of pages (mkdocs.yml's nav, whatever pages it holds), the
Python versions (pyproject.toml and JAX's) and the nvcc search order (toolchain.nvcc)."""

from __future__ import annotations

import inspect
import re
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import brainevent
from brainevent.load_options import CPU, CUDA, keywords_of

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

pytestmark = pytest.mark.skipif(not DOCS.is_dir(), reason="not applicable: no docs/, not a source checkout")


def _section(text: str, heading: str) -> str:
    """From ``heading`` (a line) to the next heading of its level or higher (outside code)."""
    lines = text.splitlines()
    start = lines.index(heading)
    level, fenced = len(heading.split(" ")[0]), False
    for end in range(start + 1, len(lines)):
        fenced ^= lines[end].startswith("```")
        if not fenced and re.match(rf"#{{1,{level}}} ", lines[end]):
            return "\n".join(lines[start:end])
    return "\n".join(lines[start:])


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]  # type: ignore[no-any-return]


# ---------------------------------------------------------------- loader parameters


def _signature_text(loader: Callable[..., Any]) -> str:
    parts, star = [], False
    for p in inspect.signature(loader).parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        parts.append(p.name if p.default is p.empty else f"{p.name}={p.default!r}")
    return f"{loader.__name__}({', '.join(parts)})"


@pytest.mark.parametrize(
    ("page", "heading", "loader", "platform"),
    [
        ("cpu-tutorial.md", "## 9. Options of `load_cpp_inline`", brainevent.load_cpp_inline, CPU),
        (
            "cuda-tutorial.md",
            "## 6. Every parameter of `load_cuda_inline`",
            brainevent.load_cuda_inline,
            CUDA,
        ),
    ],
)
def test_a_tutorials_parameter_list_is_the_loaders(
    page: str, heading: str, loader: Callable[..., Any], platform: str
) -> None:
    section = _section((DOCS / page).read_text(), heading)
    shown = re.search(r"```text\n(.*?)```", section, re.S)
    assert shown, f"{page}: no signature block under {heading!r}"
    assert " ".join(shown.group(1).split()) == _signature_text(loader)
    rows = re.findall(r"^\| `(\w+)` \|", section, re.M)
    assert rows == list(inspect.signature(loader).parameters), rows
    assert set(keywords_of(platform)) <= set(rows)  # every option of the table for the platform


# ---------------------------------------------------------------- commands


def _commands() -> list[str]:
    from brainevent.cli import _COMMANDS

    return [command for command in _COMMANDS if " " not in command]


def test_the_home_pages_command_list_is_the_clis() -> None:
    text = (DOCS / "index.md").read_text()
    line = next(line for line in text.splitlines() if line.startswith("- [Command line](cli.md):"))
    assert re.findall(r"`([\w-]+)`", line) == _commands()


def test_the_readme_and_the_cli_page_name_every_command() -> None:
    readme = (ROOT / "README.md").read_text()
    bullet = readme[readme.index("- **Command line**") :].split("\n- **")[0]
    headings = "\n".join(re.findall(r"^#+ .*$", (DOCS / "cli.md").read_text(), re.M))
    for command in _commands():
        assert f"`brainevent {command}" in bullet, command
        assert f"`{command}`" in headings or f"`brainevent {command}`" in headings, command


# ---------------------------------------------------------------- extras


def _requirement_names(requirements: list[str]) -> Iterator[str]:
    for requirement in requirements:
        name = re.split(r"[<>=!~ ;]", requirement, maxsplit=1)[0]
        if name.startswith("brainevent["):  # the extras this one includes
            yield from name.removeprefix("brainevent[").removesuffix("]").split(",")
        else:
            yield name


def _extras_table() -> dict[str, list[str]]:
    """{extra: [installs, for]} from the install page's table."""
    section = _section((DOCS / "install.md").read_text(), "### Extras")
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| `")]
    return {cells[0].strip("| `"): cells[1:] for cells in rows}


def test_the_install_pages_extras_are_pyprojects() -> None:
    extras = _pyproject()["optional-dependencies"]
    table = _extras_table()
    assert sorted(table) == sorted(extras)
    for extra, (listed, _) in table.items():
        assert set(re.findall(r"`([^`]+)`", listed)) == set(_requirement_names(extras[extra])), extra


def test_the_install_page_gives_the_cuda_extras_sizes_and_the_no_gpu_note() -> None:
    table = _extras_table()
    for extra in ("cuda12", "cuda13"):
        assert re.search(r"GB of wheels, \d+(\.\d+)? GB installed", table[extra][1]), extra
    text = (DOCS / "install.md").read_text()
    assert "Unable to load cuPTI" in text and "Set `JAX_PLATFORMS=cpu` to silence" in text


# ---------------------------------------------------------------- pages


needs_mkdocs_yml = pytest.mark.skipif(
    not (ROOT / "mkdocs.yml").is_file(), reason="not applicable: no mkdocs.yml, not a source checkout"
)


def _nav_pages() -> set[str]:
    text = (ROOT / "mkdocs.yml").read_text()
    nav = text[text.index("\nnav:\n") + len("\nnav:\n") :]
    end = re.search(r"^\w", nav, re.M)  # the next top-level key
    nav = nav[: end.start()] if end else nav
    return set(re.findall(r"^\s*- (?:[^:\n]+: )?([\w./-]+\.md)\s*$", nav, re.M))


def _linked(text: str, prefix: str) -> set[str]:
    return set(re.findall(rf"\]\({re.escape(prefix)}([\w./-]+\.md)(?:#[\w-]*)?\)", text))


@needs_mkdocs_yml
def test_the_readmes_documentation_list_is_the_sites_nav() -> None:
    nav = _nav_pages()
    assert "index.md" in nav and len(nav) > 10
    listed = _linked(_section((ROOT / "README.md").read_text(), "## Documentation"), "docs/")
    assert listed == nav, f"not in the README: {sorted(nav - listed)}; not in the nav: {sorted(listed - nav)}"


@needs_mkdocs_yml
def test_the_home_pages_list_is_the_sites_nav() -> None:
    nav = _nav_pages() - {"index.md"}
    listed = _linked(_section((DOCS / "index.md").read_text(), "## Pages"), "")
    assert listed == nav, (
        f"not on the home page: {sorted(nav - listed)}; not in the nav: {sorted(listed - nav)}"
    )


# ---------------------------------------------------------------- versions, search order


def test_the_readme_gives_pyprojects_python_and_jaxs() -> None:
    floor = _pyproject()["requires-python"].removeprefix(">=")
    setup = _section((ROOT / "README.md").read_text(), "## Set-up")
    assert f"Python ≥ {floor}" in setup
    assert "JAX 0.11 and newer need Python ≥ 3.12" in setup


def test_the_readme_gives_the_nvcc_search_order_doctor_reports() -> None:
    from brainevent.toolchain import nvcc

    readme = (ROOT / "README.md").read_text()
    bullet = readme[readme.index("- **Toolchain discovery**") :].split("\n- **")[0]
    bullet = " ".join(bullet.split())
    # The found_via of the route through the CUDA runtime's toolkit, as nvcc.py reports it.
    assert '"cuda-pathfinder:cudart"' in Path(nvcc.__file__).read_text()
    order = ["BRAINEVENT_NVCC", "pip wheels", "conda", "CUDA_PATH", "CUDA_HOME"]
    order += ["`cuda-pathfinder:cudart`", "PATH (", "`/usr/local/cuda`"]
    positions = [bullet.find(step) for step in order]
    assert -1 not in positions and positions == sorted(positions), dict(zip(order, positions, strict=True))


def test_the_readmes_quick_tier_installs_what_it_needs() -> None:
    setup = " ".join(_section((ROOT / "README.md").read_text(), "## Set-up").split())
    assert ".venv/bin/pip install pytest && .venv/bin/python -m pytest -q -m unit" in setup
    assert "is skipped with the module's name" in setup
