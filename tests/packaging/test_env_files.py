"""The conda environment files, checked offline (conda itself is not needed).

- YAML shape (PyYAML): name, channels (conda-forge only), dependencies, one pip section;
- every conda dependency is a valid MatchSpec (py-rattler);
- what each file must hold: Python within requires-python, the project's dependencies,
  the test tools, a host compiler that the file's nvcc accepts (HOST_LIMITS);
- the pip section installs this checkout with the ``test`` extra (the comments say to run
  the suite), and pip can resolve it (``--dry-run``; skipped without network);
- lower bounds of packages that pyproject.toml also names are the same as there (one
  source of truth); the comments point at a command that tests this environment.

tests/packaging/test_conda_solve.py solves the files against a model of conda-forge's recipes.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV_FILES = sorted(ROOT.glob("environment*.yml"))
PYTHONS = ("3.11", "3.12", "3.13")  # the nox matrix
TOOLS = ("pip", "pytest", "hypothesis", "nox")

pytestmark = pytest.mark.skipif(
    not ENV_FILES, reason="not applicable: no environment*.yml, not a source checkout"
)

yaml = pytest.importorskip("yaml", reason="PyYAML is not installed (pip install pyyaml)")


def _rattler() -> Any:
    return pytest.importorskip("rattler", reason="py-rattler is not installed (pip install py-rattler)")


@functools.cache
def project() -> dict[str, Any]:
    data: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return data


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.lower())


@functools.cache
def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict), f"{path.name}: top level must be a mapping"
    return data


def conda_specs(path: Path) -> list[str]:
    return [d for d in load(path)["dependencies"] if isinstance(d, str)]


def pip_lines(path: Path) -> list[str]:
    sections = [d["pip"] for d in load(path)["dependencies"] if isinstance(d, dict)]
    return list(sections[0]) if sections else []


def matchspecs(path: Path) -> dict[str, Any]:
    rattler = _rattler()
    specs = {}
    for text in conda_specs(path):
        spec = rattler.MatchSpec(text, strict=True)
        specs[spec.name.normalized] = spec
    return specs


def project_extras(path: Path) -> list[str]:
    """Extras named in the pip line that installs the checkout ("-e .[a,b]" -> [a, b])."""
    for line in pip_lines(path):
        match = re.fullmatch(r"-e\s+\.(?:\[([\w,\s-]+)\])?", line.strip())
        if match:
            return [e.strip() for e in (match.group(1) or "").split(",") if e.strip()]
    return []


def version_allowed(spec: Any, version: str) -> bool:
    rattler = _rattler()
    return spec.version is None or rattler.VersionSpec(str(spec.version)).matches(rattler.Version(version))


ids = [p.name for p in ENV_FILES]


# ---------------------------------------------------------------------- shape


@pytest.mark.parametrize("path", ENV_FILES, ids=ids)
def test_yaml_shape(path: Path) -> None:
    data = load(path)
    assert set(data) <= {"name", "channels", "dependencies", "variables"}, sorted(data)
    assert isinstance(data.get("name"), str) and data["name"].startswith("brainevent")
    assert data.get("channels") == ["conda-forge"], "conda-forge only (no defaults channel)"
    deps = data.get("dependencies")
    assert isinstance(deps, list) and deps
    pip_sections = [d for d in deps if isinstance(d, dict)]
    assert all(isinstance(d, str) for d in deps if not isinstance(d, dict))
    assert len(pip_sections) == 1 and list(pip_sections[0]) == ["pip"], "exactly one `- pip:` section"
    assert all(isinstance(line, str) for line in pip_sections[0]["pip"])


def test_env_file_names_are_distinct() -> None:
    names = [load(p)["name"] for p in ENV_FILES]
    assert len(names) == len(set(names)), names


# ---------------------------------------------------------------- conda specs


@pytest.mark.parametrize("path", ENV_FILES, ids=ids)
def test_every_conda_dependency_is_a_matchspec(path: Path) -> None:
    rattler = _rattler()
    seen: set[str] = set()
    for text in conda_specs(path):
        try:
            spec = rattler.MatchSpec(text, strict=True)
        except Exception as exc:  # rattler's parse errors share no public base class
            pytest.fail(f"{path.name}: {text!r} is not a valid MatchSpec: {exc}")
        name = spec.name.normalized
        assert name not in seen, f"{path.name}: {name} listed twice"
        seen.add(name)


def test_matchspec_check_rejects_nonsense() -> None:
    rattler = _rattler()
    with pytest.raises(Exception):  # noqa: B017 - any parse error will do
        rattler.MatchSpec("jax >= >= 1", strict=True)


@pytest.mark.parametrize("path", ENV_FILES, ids=ids)
def test_python_pin_is_supported(path: Path) -> None:
    python = matchspecs(path).get("python")
    assert python is not None and python.version is not None, f"{path.name}: pin python"
    assert not version_allowed(python, "3.10"), "requires-python is >=3.11"
    assert any(version_allowed(python, v) for v in PYTHONS), f"python {python.version} is not in {PYTHONS}"


@pytest.mark.parametrize("path", ENV_FILES, ids=ids)
def test_provides_the_project_dependencies_and_tools(path: Path) -> None:
    specs = matchspecs(path)
    from_pip: set[str] = set()
    extras = project()["optional-dependencies"]
    for extra in project_extras(path):
        from_pip |= {_norm(re.split(r"[\[<>=!~;\s]", r, maxsplit=1)[0]) for r in extras[extra]}
    for requirement in project()["dependencies"]:
        name = _norm(re.split(r"[\[<>=!~;\s]", requirement, maxsplit=1)[0])
        assert name in specs or name in from_pip, f"{path.name}: {name} comes from neither conda nor pip"
    for tool in TOOLS:
        assert tool in specs, f"{path.name}: {tool} missing"
    assert "gxx" in specs or "cxx-compiler" in specs, f"{path.name}: no C++ compiler"


def _host_limit(cuda: tuple[int, int]) -> int:
    from brainevent.toolchain.host_compat import host_limit_for

    row = host_limit_for(cuda)
    assert row is not None, f"HOST_LIMITS has no row for CUDA {cuda}"
    return row.gcc_max


def _cuda_release(spec: Any) -> tuple[int, int]:
    match = re.fullmatch(r"=?=?(\d+)\.(\d+)(\.\*)?", str(spec.version or ""))
    assert match, f"cuda-version must pin a major.minor release, got {spec.version}"
    return int(match.group(1)), int(match.group(2))


@pytest.mark.parametrize("path", ENV_FILES, ids=ids)
def test_host_compiler_is_one_nvcc_accepts(path: Path) -> None:
    specs = matchspecs(path)
    extras = project_extras(path)
    if "cuda-nvcc" in specs:
        assert "cuda-version" in specs, f"{path.name}: cuda-nvcc without a cuda-version pin"
        cuda = _cuda_release(specs["cuda-version"])
    elif any(e.startswith("cuda") for e in extras):
        # nvcc from pip wheels: the oldest release of that major the extra admits.
        cuda = (int(next(e for e in extras if e.startswith("cuda"))[4:]), 0)
    else:
        pytest.skip(f"not applicable: {path.name} has no CUDA toolkit")
    gcc_max = _host_limit(cuda)
    gxx = specs.get("gxx")
    assert gxx is not None, f"{path.name}: pin gxx within nvcc {cuda}'s range"
    assert not version_allowed(gxx, f"{gcc_max + 1}"), f"gxx {gxx.version} admits gcc > {gcc_max}"
    assert version_allowed(gxx, f"{gcc_max}") or version_allowed(gxx, f"{gcc_max - 1}")


@pytest.mark.parametrize("path", ENV_FILES, ids=ids)
def test_cuda12_file_has_a_toolkit_and_a_cuda12_jax(path: Path) -> None:
    specs = matchspecs(path)
    if "cuda-nvcc" not in specs:
        pytest.skip("not applicable: not a conda CUDA toolkit environment")
    major, _ = _cuda_release(specs["cuda-version"])
    jaxlib = specs.get("jaxlib")
    assert jaxlib is not None and f"cuda{major}" in str(jaxlib.build), (
        f"{path.name}: jaxlib must be a CUDA {major} build (jaxlib[build='*cuda{major}*'])"
    )


# --------------------------------------------------------------------- pip


@pytest.mark.parametrize("path", ENV_FILES, ids=ids)
def test_pip_section_installs_the_checkout(path: Path) -> None:
    lines = [line.strip() for line in pip_lines(path)]
    assert any(re.fullmatch(r"-e\s+\.(\[[\w,\s-]+\])?", line) for line in lines), lines
    known = set(project()["optional-dependencies"])
    for extra in project_extras(path):
        assert extra in known, f"{path.name}: extra {extra!r} is not in pyproject.toml"


@pytest.mark.parametrize("path", ENV_FILES, ids=ids)
def test_pip_section_installs_the_test_extra(path: Path) -> None:
    """The comments say to run the suite: without this extra the lint, docs and env checks skip."""
    assert "test" in project_extras(path), f"{path.name}: install the checkout as -e .[...,test]"


def pyproject_lower_bounds() -> dict[str, str]:
    """{name: lower bound} over the dependencies and every extra (the highest where named twice)."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    bounds: dict[str, str] = {}
    extras = project()["optional-dependencies"].values()
    for text in [*project()["dependencies"], *(r for extra in extras for r in extra)]:
        requirement = Requirement(text)
        for spec in requirement.specifier:
            if spec.operator == ">=":
                name = _norm(requirement.name)
                if name not in bounds or Version(spec.version) > Version(bounds[name]):
                    bounds[name] = spec.version
    return bounds


def _conda_lower_bound(spec: Any) -> str | None:
    match = re.search(r">=\s*([\w.]+)", str(spec.version or ""))
    return match.group(1) if match else None


@pytest.mark.parametrize("path", ENV_FILES, ids=ids)
def test_lower_bounds_are_pyprojects(path: Path) -> None:
    bounds = pyproject_lower_bounds()
    shared = {name: spec for name, spec in matchspecs(path).items() if name in bounds}
    assert {"numpy", "pytest", "hypothesis", "nox"} <= set(shared), sorted(shared)
    for name, spec in shared.items():
        assert _conda_lower_bound(spec) == bounds[name], (
            f"{path.name}: {name} {spec.version} but pyproject.toml says >={bounds[name]}"
        )
    jaxlib = matchspecs(path).get("jaxlib")
    if jaxlib is not None:  # conda's jaxlib moves with jax
        assert _conda_lower_bound(jaxlib) == bounds["jax"]


@pytest.mark.parametrize("path", ENV_FILES, ids=ids)
def test_instructions_test_this_environment(path: Path) -> None:
    """nox's tests-cpu builds a fresh CPU venv: it would not test what the file created."""
    comments = "\n".join(line for line in path.read_text().splitlines() if line.startswith("#"))
    assert "nox -s tests-here" in comments, f"{path.name}: suggest `nox -s tests-here`"
    assert "tests-cpu" not in comments, f"{path.name}: tests-cpu does not use this environment"


_NETWORK_TROUBLE = (
    "connection",
    "network is unreachable",
    "temporary failure in name resolution",
    "name or service not known",
    "max retries exceeded",
    "could not fetch",
    "no matching distribution found for setuptools",
    "ssl",
)


@functools.cache
def _dry_run(lines: tuple[str, ...]) -> dict[str, Any]:
    try:
        subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("pip is not installed in this environment")
    args: list[str] = []
    for line in lines:
        args += line.split(maxsplit=1) if line.startswith("-e ") else [line]
    pip = [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--quiet"]
    proc = subprocess.run(
        [*pip, "--disable-pip-version-check", "--no-input", "--report", "-", *args],
        cwd=ROOT,  # conda runs the pip section from the file's directory
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        text = (proc.stdout + proc.stderr).lower()
        if any(marker in text for marker in _NETWORK_TROUBLE):
            pytest.skip(f"pip could not reach a package index: {proc.stderr.strip().splitlines()[-1:]}")
        pytest.fail(f"pip cannot resolve {list(lines)}:\n{proc.stderr}")
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


@pytest.mark.parametrize("path", ENV_FILES, ids=ids)
def test_pip_section_resolves(path: Path) -> None:
    report = _dry_run(tuple(line.strip() for line in pip_lines(path)))
    installed = {_norm(item["metadata"]["name"]): item for item in report["install"]}
    assert "brainevent" in installed, sorted(installed)
    meta = installed["brainevent"]["metadata"]
    assert meta["version"] == project()["version"]
    for extra in project_extras(path):
        assert extra in meta.get("provides_extra", []), f"the built package lacks extra {extra!r}"
