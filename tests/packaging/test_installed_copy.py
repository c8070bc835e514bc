"""The suite as an image carries it: the files the Dockerfile's `suite` stage copies, run
with the installed brainevent, without src/ and examples/. The tests that read the
checkout must skip there with their reason, not fail; the rest must still run.

No image is built: the copy is made from the Dockerfile's own COPY lines, so a file the
images gain or lose changes what is checked here too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.packaging.test_dockerfile import DOCKERFILE, ROOT, parse

pytestmark = pytest.mark.skipif(
    not DOCKERFILE.is_file(), reason="not applicable: no Dockerfile, not a source checkout"
)

# node id -> the outcome it must have in the copy. The first ones read src/ or examples/
# (they failed in the images before they learnt to skip); the last one reads docs/,
# which the images carry, so it must run there.
EXPECTED = {
    "tests/layout/test_import_graph.py::test_src_has_no_import_cycles": "skipped",
    "tests/layout/test_import_graph.py::test_every_import_of_ours_names_a_module_that_exists": "skipped",
    "tests/layout/test_one_writer.py": "skipped",
    "tests/bundle/test_bundle_wheel.py::test_bundle_of_other_sources_is_not_used": "skipped",
    "tests/bundle/test_bundle_wheel.py::test_wheel_runs_without_a_compiler": "skipped",
    "tests/packaging/test_lint.py": "skipped",
    "tests/docs/test_docs_sources.py::test_the_readmes_documentation_list_is_the_sites_nav": "skipped",
    "tests/runtime/test_result_sizes.py::test_shapes_reach_xla_only_through_the_checked_helpers": "skipped",
    "tests/docs/test_architecture_paths.py": "skipped",  # docs/ is there, src/ is not
    "tests/docs/test_install_and_docs_claims.py::test_every_pip_line_asks_for_this_brainevent": "passed",
}


def image_copy(dest: Path) -> Path:
    """Copies what the `suite` stage copies into /opt/brainevent; returns that folder."""
    stage = parse(DOCKERFILE.read_text()).stage("suite")
    home = dest / "opt" / "brainevent"
    for keyword, rest in stage.instructions:
        if keyword != "COPY":
            continue
        *sources, target = rest.split()
        assert target.startswith("/opt/brainevent"), f"COPY {rest}: outside the suite's folder"
        into = dest / target.lstrip("/")
        for source in sources:
            path = ROOT / source
            if path.is_dir():
                shutil.copytree(path, into, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                into.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, into / path.name)
    return home


def pytest_in_copy(home: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """pytest ``args`` run in the copy ``home`` on the CPU, with the installed brainevent (not src/)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BRAINEVENT_REQUIRE_ALL_TESTS")}
    env["JAX_PLATFORMS"] = "cpu"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args]
    return subprocess.run(command, cwd=home, env=env, capture_output=True, text=True, timeout=timeout)


def _outcomes(report: Path) -> dict[str, tuple[str, str]]:
    """{node id: (outcome, message)} from a JUnit XML report."""
    found = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        module = case.get("classname", "").replace(".", "/") + ".py"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("skipped", "failure", "error"):
                outcome, message = child.tag, child.get("message", "")
        found[f"{module}::{case.get('name')}"] = (outcome, message)
    return found


@pytest.mark.slow
def test_checkout_tests_skip_in_a_copy_without_the_checkout(tmp_path: Path) -> None:
    home = image_copy(tmp_path)
    assert not (home / "src").exists() and not (home / "examples").exists()
    report = tmp_path / "r.xml"
    done = pytest_in_copy(home, "--junitxml", str(report), *sorted(EXPECTED))
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    outcomes = _outcomes(report)
    for node, expected in EXPECTED.items():
        matching = {k: v for k, v in outcomes.items() if k == node or k.startswith(node + "::")}
        assert matching, f"{node}: not run in the copy"
        for name, (outcome, message) in matching.items():
            assert outcome == expected, f"{name}: {outcome} ({message}), expected {expected}"
            if expected == "skipped":
                assert "not a source checkout" in message, f"{name}: skipped for {message!r}"


@pytest.mark.slow
def test_the_whole_suite_collects_in_a_copy_without_the_checkout(tmp_path: Path) -> None:
    home = image_copy(tmp_path)
    done = pytest_in_copy(home, "--collect-only", "tests")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " tests collected" in done.stdout or " test collected" in done.stdout, done.stdout[-2000:]


@pytest.mark.slow
def test_the_unit_tier_passes_in_a_copy_without_the_checkout(tmp_path: Path) -> None:
    """Any pure-Python test that reads src/, examples/ or another file the images lack, new ones
    included, fails here (not only those EXPECTED names): the unit tier runs whole in the copy."""
    home = image_copy(tmp_path)
    done = pytest_in_copy(home, "-m", "unit", "tests", timeout=1200)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout, done.stdout[-2000:]
