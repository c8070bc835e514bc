#!/usr/bin/env python3
"""Check a built brainevent image with a container engine (docker or podman).

    python3 docker/check_image.py --image brainevent:cuda13 --target cuda13 \
        [--engine "podman --runtime /usr/sbin/runc"] [--outside PYTHON] [--artifacts DIR]

For every target: `brainevent build` of the sample kernels in docker/kernels/ runs twice,
each time in a fresh container with a fresh cache volume and no network, and the two
sets of shared objects must be byte-identical. For the CUDA targets, before that:
`brainevent doctor` must find nvcc in NVIDIA's pip wheel, and the compile-only tests
(`pytest -m nvcc`) must pass; each CUDA artifact must hold SASS for every --arch and PTX
for the newest (read with brainevent's own fat-binary reader).

Then, from the first build's volume mounted read-only in fresh containers, the programs'
own load calls (the tutorial's load_cuda_inline, load_cuda_dir) must find those
artifacts without compiling: once with the image's toolchain (the same image on a GPU
node) and once with no compiler at all (a node that only loads).

--outside PYTHON builds the same kernels with that interpreter's brainevent (a venv
installed with docker/constraints.txt's pins) and requires the same bytes. The kernels
are mounted in the container at the path they have on this machine, because a file
loader's artifact records its source path (diagnostics and __FILE__ name the file).

Standard library only: it runs on the host, next to the engine. Exit status 0 when every
check passed, 1 otherwise; a summary is printed either way.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
KERNELS = HERE / "kernels"
FATBIN_READER = HERE.parent / "src" / "brainevent" / "toolchain" / "fatbin.py"
CUDA_TARGETS = ("cuda12", "cuda13")
DEFAULT_ARCHS = ("sm_80", "sm_90")
# Where each CUDA image's nvcc must come from (doctor's found_via).
EXPECTED_NVCC = {"cuda13": "pip-wheel"}


class CheckFailed(Exception):
    pass


def log(message: str) -> None:
    print(f"[check-image] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- what is built


def build_paths(target: str, kernels: Path) -> list[str]:
    """`brainevent build` arguments: the CUDA tutorial's vector add, keyed as load_cuda_inline
    (name my_kernels) and a directory built as load_cuda_dir; a C++ file for cpu."""
    if target in CUDA_TARGETS:
        return ["--as-inline", str(kernels / "my_kernels.cu"), str(kernels / "my_ops")]
    return [str(kernels / "scale.cpp")]


def build_command(target: str, kernels: Path, cache: str, archs: list[str]) -> list[str]:
    command = ["brainevent", "build", *build_paths(target, kernels), "--cache-dir", cache]
    if target in CUDA_TARGETS:
        for arch in archs:
            command += ["--arch", arch]
    return command


def stage_kernels(target: str, work: Path) -> Path:
    """A world-readable copy of the sample kernels (the image runs as uid 10001)."""
    source = KERNELS / ("cuda" if target in CUDA_TARGETS else "cpu")
    kernels = work / "kernels"
    shutil.copytree(source, kernels)
    for path in [work, *kernels.rglob("*"), kernels]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return kernels


# ---------------------------------------------------------------- artifacts


def artifacts(root: Path) -> dict[str, Path]:
    """{module name: its shared object} in a cache root (one entry per module expected)."""
    found: dict[str, list[Path]] = {}
    for manifest in sorted(root.glob("v*/*/*/manifest.json")):
        data = json.loads(manifest.read_text())
        found.setdefault(manifest.parent.parent.name, []).append(manifest.parent / data["artifact"])
    several = {name: paths for name, paths in found.items() if len(paths) != 1}
    if several:
        raise CheckFailed(f"expected one entry per module under {root}, found {several}")
    return {name: paths[0] for name, paths in found.items()}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_fatbin_reader() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_brainevent_fatbin", FATBIN_READER)
    if spec is None or spec.loader is None:
        raise CheckFailed(f"cannot load the fat-binary reader {FATBIN_READER}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def gpu_code(path: Path) -> list[str]:
    """The kinds of GPU code in an artifact ("sass 80", "ptx 90"), each once: a module of
    several .cu files carries one fat binary per file."""
    reader = load_fatbin_reader()
    return sorted({f"{e.kind} {e.arch}" for e in reader.fatbin_entries(path)})


def expected_gpu_code(archs: list[str]) -> list[str]:
    numbers = sorted(int(a.removeprefix("sm_").removeprefix("compute_")) for a in archs)
    return sorted([f"sass {n}" for n in numbers] + [f"ptx {numbers[-1]}"])


# ---------------------------------------------------------------- the engine


class Engine:
    def __init__(self, command: str, image: str) -> None:
        self.prefix = shlex.split(command)
        self.image = image

    def run(self, *args: str, capture: bool = False, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [*self.prefix, *args],
            text=True,
            stdout=subprocess.PIPE if capture else None,
            stderr=subprocess.STDOUT if capture else None,
        )
        if check and proc.returncode != 0:
            shown = (proc.stdout or "")[-4000:] if capture else ""
            raise CheckFailed(f"`{shlex.join([*self.prefix, *args])}` exited with {proc.returncode}\n{shown}")
        return proc

    def container(
        self, *args: str, capture: bool = False, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return self.run("run", "--rm", "--network", "none", *args, capture=capture, check=check)

    def export_volume(self, volume: str, dest: Path) -> None:
        """Copies a volume's files out through a container (works for docker and podman)."""
        dest.mkdir(parents=True)
        tar = dest.parent / f"{dest.name}.tar"
        with tar.open("wb") as out:
            mount = ["-v", f"{volume}:/cache:ro"]
            tar_out = ["--entrypoint", "tar", self.image, "-C", "/cache", "-cf", "-", "."]
            proc = subprocess.run(
                [*self.prefix, "run", "--rm", "--network", "none", *mount, *tar_out], stdout=out
            )
        if proc.returncode != 0:
            raise CheckFailed(f"could not copy the volume {volume} out (tar exited with {proc.returncode})")
        with tarfile.open(tar) as archive:
            if hasattr(tarfile, "data_filter"):
                archive.extractall(dest, filter="data")
            else:  # Python < 3.11.4: the archive comes from our own image
                archive.extractall(dest)
        tar.unlink()


# ---------------------------------------------------------------- the checks


def check_doctor(engine: Engine, target: str) -> str:
    proc = engine.container(engine.image, "brainevent", "doctor", capture=True, check=False)
    text = proc.stdout or ""
    section = text.split("CUDA compiler (nvcc)", 1)[-1]
    match = re.search(r"^\s*found_via\s+(\S+)", section, re.M)
    path = re.search(r"^\s*path\s+(.+)$", section, re.M)
    found_via = match.group(1) if match else "?"
    print(text.rstrip())
    if proc.returncode != 0:
        raise CheckFailed(f"brainevent doctor exited with {proc.returncode} in {engine.image}")
    expected = EXPECTED_NVCC.get(target)
    if expected and not found_via.startswith(expected):
        raise CheckFailed(f"doctor found nvcc via {found_via!r}, expected {expected!r}")
    return f"{path.group(1).strip() if path else '?'} (found_via {found_via})"


def check_compile_only_tests(engine: Engine) -> str:
    proc = engine.container(engine.image, "test", "-q", "-m", "nvcc", capture=True, check=False)
    text = proc.stdout or ""
    summary = text.rstrip().splitlines()[-1] if text.strip() else ""
    print(text.rstrip()[-6000:])
    passed = re.search(r"(\d+) passed", summary)
    if proc.returncode != 0 or not passed:
        raise CheckFailed(f"the compile-only tests failed in {engine.image}: {summary}")
    return summary.strip("= ")


def build_in_image(engine: Engine, target: str, kernels: Path, archs: list[str], volume: str) -> float:
    """`brainevent build` in a fresh container into the fresh volume `volume`."""
    engine.run("volume", "rm", "-f", volume, capture=True, check=False)
    engine.run("volume", "create", volume, capture=True)
    command = build_command(target, kernels, "/cache", archs)
    log(f"{shlex.join(command)} (fresh volume {volume})")
    t0 = time.monotonic()
    engine.container("-v", f"{kernels}:{kernels}:ro", "-v", f"{volume}:/cache", engine.image, *command)
    return time.monotonic() - t0


# What a program on the GPU node runs: the tutorial's own call, and load_cuda_dir.
LOAD_PROGRAM = r"""
import sys
from pathlib import Path

import brainevent

kernels = Path(sys.argv[1])
if sys.argv[2] == "cuda":
    modules = [
        brainevent.load_cuda_inline(
            name="my_kernels", cuda_sources=(kernels / "my_kernels.cu").read_text(), functions=None
        ),
        brainevent.load_cuda_dir(kernels / "my_ops"),
    ]
else:
    modules = [brainevent.load_cpp_file(kernels / "scale.cpp")]
for module in modules:
    print("LOADED", module.name, "built" if module.built_now else "cached", module.path)
from brainevent.errors import BrainEventError
from brainevent.toolchain import find_host_compiler
from brainevent.toolchain.nvcc import find_nvcc

for tool, find in (("host-compiler", find_host_compiler), ("nvcc", find_nvcc)):
    try:
        print("TOOL", tool, find().path)
    except BrainEventError:
        print("TOOL", tool, "none")
"""


def check_loads(
    engine: Engine, target: str, kernels: Path, archs: list[str], volume: str, built: dict[str, str]
) -> dict[str, str]:
    """Loads from the filled volume, read-only: with the image's toolchain, then with none.

    `built` maps each module to its artifact's path in the volume; every load must
    return that file without building anything."""
    env = ["-e", f"BRAINEVENT_CUDA_ARCH={','.join(archs)}"] if target in CUDA_TARGETS else []
    # No compiler: names that do not exist, and a PATH without g++ (the wheel's nvcc
    # stays installed, but BRAINEVENT_NVCC takes precedence over every search).
    bare = ["-e", "BRAINEVENT_NVCC=/nonexistent/nvcc", "-e", "BRAINEVENT_CXX=/nonexistent/g++"]
    bare += ["-e", "PATH=/nonexistent", "-e", "JAX_PLATFORMS=cpu"]
    kind = "cuda" if target in CUDA_TARGETS else "cpu"
    results = {}
    for label, extra, python in (
        ("with the toolchain", [], "python"),
        ("without a compiler", bare, "/opt/venv/bin/python"),
    ):
        proc = engine.container(
            "-v", f"{kernels}:{kernels}:ro", "-v", f"{volume}:/cache:ro", *env, *extra,
            engine.image, python, "-c", LOAD_PROGRAM, str(kernels), kind,
            capture=True, check=False,
        )  # fmt: skip
        lines = [line.split() for line in (proc.stdout or "").splitlines() if line.startswith("LOADED ")]
        loaded = {words[1]: (words[2], words[3]) for words in lines if len(words) == 4}
        if proc.returncode != 0 or sorted(loaded) != sorted(built):
            raise CheckFailed(
                f"loading {label} failed (status {proc.returncode}):\n{(proc.stdout or '')[-3000:]}"
            )
        for name, (state, path) in loaded.items():
            if state != "cached" or path != built[name]:
                raise CheckFailed(
                    f"loading {label}: {name} was {state} at {path}, expected the build {built[name]}"
                )
        tools = dict(
            line.split()[1:3] for line in (proc.stdout or "").splitlines() if line.startswith("TOOL ")
        )
        if label == "without a compiler" and set(tools.values()) != {"none"}:
            raise CheckFailed(f"loading {label}: a compiler was still found: {tools}")
        results[label] = f"every module loaded from the cache, nothing built (compilers: {tools})"
        log(f"load {label}: {', '.join(sorted(loaded))} loaded from the cache")
    return results


def build_outside(python: str, target: str, kernels: Path, archs: list[str], dest: Path) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAINEVENT_")}
    env.setdefault("JAX_PLATFORMS", "cpu")
    command = build_command(target, kernels, str(dest), archs)
    command[0:1] = [python, "-m", "brainevent"]
    log(f"outside: {shlex.join(command)}")
    t0 = time.monotonic()
    proc = subprocess.run(command, env=env)
    if proc.returncode != 0:
        raise CheckFailed(f"the build outside the image failed ({python}, status {proc.returncode})")
    return time.monotonic() - t0


def outside_toolchain(python: str) -> str:
    code = (
        "from brainevent.toolchain.nvcc import find_nvcc\n"
        "from brainevent.toolchain import find_host_compiler\n"
        "n = find_nvcc(); c = find_host_compiler()\n"
        'print(f\'nvcc {n.path} (CUDA {".".join(map(str, n.version))}, found_via {n.found_via}); '
        "host compiler {c.path}')\n"
    )
    proc = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, env={**os.environ, "JAX_PLATFORMS": "cpu"}
    )
    return (proc.stdout or proc.stderr).strip()


def compare(label: str, first: dict[str, Path], second: dict[str, Path]) -> list[str]:
    problems = []
    if sorted(first) != sorted(second):
        problems.append(f"{label}: modules differ: {sorted(first)} vs {sorted(second)}")
    for name in sorted(set(first) & set(second)):
        a, b = sha256(first[name]), sha256(second[name])
        if a != b:
            problems.append(f"{label}: {name} differs: {a[:16]} ({first[name]}) vs {b[:16]} ({second[name]})")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", default="docker", help="engine command, e.g. 'podman --runtime runc'")
    parser.add_argument("--image", required=True)
    parser.add_argument("--target", required=True, choices=("cpu", "cuda12", "cuda13"))
    parser.add_argument("--arch", action="append", help=f"default: {' '.join(DEFAULT_ARCHS)}")
    parser.add_argument("--outside", metavar="PYTHON", help="also build with this interpreter's brainevent")
    parser.add_argument("--artifacts", metavar="DIR", help="keep the artifacts and a summary.json here")
    parser.add_argument("--skip-tests", action="store_true", help="skip doctor and the compile-only tests")
    args = parser.parse_args(argv)
    archs = args.arch or list(DEFAULT_ARCHS)
    engine = Engine(args.engine, args.image)
    cuda = args.target in CUDA_TARGETS

    summary: dict[str, object] = {"image": args.image, "target": args.target, "archs": archs if cuda else []}
    problems: list[str] = []
    work = Path(tempfile.mkdtemp(prefix=f"brainevent-check-{args.target}-"))
    volumes = {run: f"brainevent-check-{args.target}-{run}-{os.getpid()}" for run in ("run1", "run2")}
    try:
        if cuda and not args.skip_tests:
            try:
                summary["nvcc_in_image"] = check_doctor(engine, args.target)
            except CheckFailed as exc:  # report it, go on with the other checks
                problems.append(str(exc))
            try:
                summary["compile_only_tests"] = check_compile_only_tests(engine)
            except CheckFailed as exc:
                problems.append(str(exc))
        kernels = stage_kernels(args.target, work)
        runs = {}
        for run, volume in volumes.items():
            seconds = build_in_image(engine, args.target, kernels, archs, volume)
            summary[f"{run}_seconds"] = round(seconds, 1)
            engine.export_volume(volume, work / run)
            runs[run] = artifacts(work / run)
        if not runs["run1"]:
            raise CheckFailed("brainevent build produced no shared object")
        problems += compare("image run1 vs run2", runs["run1"], runs["run2"])
        modules: dict[str, dict[str, object]] = {}
        for name, path in runs["run1"].items():
            modules[name] = {"artifact": path.name, "sha256": sha256(path), "bytes": path.stat().st_size}
            if cuda:
                code = gpu_code(path)
                modules[name]["gpu_code"] = code
                if code != expected_gpu_code(archs):
                    problems.append(f"{name}: fat binary holds {code}, expected {expected_gpu_code(archs)}")
        summary["modules"] = modules
        in_volume = {
            name: "/cache/" + str(path.relative_to(work / "run1")) for name, path in runs["run1"].items()
        }
        try:
            summary["loads"] = check_loads(engine, args.target, kernels, archs, volumes["run1"], in_volume)
        except CheckFailed as exc:
            problems.append(str(exc))
        if args.outside:
            summary["outside_toolchain"] = outside_toolchain(args.outside)
            seconds = build_outside(args.outside, args.target, kernels, archs, work / "outside")
            summary["outside_seconds"] = round(seconds, 1)
            outside = artifacts(work / "outside")
            mismatch = compare("image vs outside", runs["run1"], outside)
            summary["outside_identical"] = not mismatch
            problems += mismatch
        if args.artifacts:
            dest = Path(args.artifacts)
            dest.mkdir(parents=True, exist_ok=True)
            for path in runs["run1"].values():
                shutil.copy2(path, dest / path.name)
    except CheckFailed as exc:
        problems.append(str(exc))
    finally:
        for volume in volumes.values():
            engine.run("volume", "rm", "-f", volume, capture=True, check=False)
        summary["problems"] = problems
        text = json.dumps(summary, indent=1)
        print(text)
        if args.artifacts:
            Path(args.artifacts).mkdir(parents=True, exist_ok=True)
            (Path(args.artifacts) / "summary.json").write_text(text + "\n")
        shutil.rmtree(work, ignore_errors=True)
    for problem in problems:
        log(f"FAILED: {problem}")
    if not problems:
        log(f"{args.target}: all checks passed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
