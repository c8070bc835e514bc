"""nox sessions for brainevent (``nox -l`` lists them; ``nox`` runs tests-cpu, lint and docs).

- ``tests-cpu-3.11`` / ``-3.12`` / ``-3.13``: the suite on CPU-only JAX (with Numba).
- ``tests-cuda12`` / ``tests-cuda13``: the suite with that CUDA stack installed from pip.
  GPU tests skip with their reason when no device is found; compile-only tests use the
  nvcc that brainevent finds, and the session prints which one (and how it was found)
  before pytest starts. The CUDA 13 wheels carry nvcc; the CUDA 12 wheels do not, so
  tests-cuda12 needs a CUDA 12 toolkit (conda's ``cuda-nvcc``, a system toolkit, or
  ``BRAINEVENT_NVCC``) to test the real stack, and says so when it finds another.
- ``tests-here``: the suite in the environment nox runs in (a conda environment made from
  ``environment*.yml``, or any venv): no environment is created. It first checks that
  this checkout is what ``brainevent`` imports and that the ``test`` extra is installed,
  and prints the JAX, CUDA and nvcc it will test.
- ``tests-backends``: the kernel-library backends where they run without a GPU: Warp on its
  CPU device, Pallas's interpreter, Triton's compiler for an explicit architecture (and the
  launcher's nvcc build when an nvcc is found), remembered backend choices.
- ``tests-slow``: only the long variants (``pytest -m slow``): 16 processes loading at once,
  12 builds killed at random points, nvcc from the CUDA 13 wheel in a fresh venv.
- ``compat``: the published brainevent 0.2.1's own tests of its kernel toolchain, imports
  rewritten to this package (``-- --gpu`` on a GPU machine); see docs/compatibility.md.
- ``mutation``: mutation testing (mutmut) of the core modules named in pyproject.toml's
  ``[tool.mutmut]``, against the fast tests; docs/mutation-testing.md has the last score.
- ``lint``: ruff (check and format), mypy, hadolint (Dockerfile), shellcheck (docker/*.sh).
- ``docs``: builds the site (``mkdocs build --strict``), renders README.md and docs/*.md
  and checks every local link and that every table renders as written, runs the README's
  Python example.
- ``docker``: builds and runs the images (``nox -s docker -- cpu cuda13``; default ``cpu``)
  with docker when a daemon answers, else podman (docker/build-podman.sh), else skips:
  the suite in the image, then docker/check_image.py (two clean precompiles, identical).
- ``docker-cuda13``: the ``cuda13`` image as a reproducible CUDA build machine, no GPU
  needed: doctor finds the wheel's nvcc, the compile-only tests pass, ``brainevent build``
  for sm_80 and sm_90 twice in fresh volumes gives identical fat binaries, and the same
  build outside the image (this session's venv, same pins) gives the same bytes.
- ``lock``: rewrites docker/constraints.txt, the pinned stack every session installs.

Interpreters come from the machine: nothing is downloaded (``UV_PYTHON_DOWNLOADS=never``).
Extra arguments after ``--`` go to pytest in the test sessions.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nox

ROOT = Path(__file__).resolve().parent
PYTHONS = ["3.11", "3.12", "3.13"]
CONSTRAINTS = ROOT / "docker" / "constraints.txt"
LOCKED_EXTRAS = ("cpu", "cuda12", "cuda13", "numba", "test", "docs", "dev")

nox.needs_version = ">=2024.4"
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["tests-cpu", "lint", "docs"]

# Never fetch an interpreter: use the ones this machine has.
os.environ.setdefault("UV_PYTHON_DOWNLOADS", "never")


def _expose_pyenv_versions() -> None:
    """With pyenv, `python3.12` resolves only for versions named in PYENV_VERSION."""
    pyenv = shutil.which("pyenv")
    if pyenv is None or os.environ.get("PYENV_VERSION"):
        return
    try:
        out = subprocess.run([pyenv, "versions", "--bare"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return
    versions = [v.strip() for v in out.stdout.splitlines() if v.strip() and "/" not in v]
    if versions:
        os.environ["PYENV_VERSION"] = ":".join(versions)


_expose_pyenv_versions()


def install_project(session: nox.Session, *extras: str) -> None:
    """Install the checkout, editable, with the pins.

    Editable because several tests run brainevent in subprocesses with ``PYTHONPATH=src``:
    both sides must load the same code (and so compute the same cache keys). The images
    test the built wheel.
    """
    target = f".[{','.join(extras)}]" if extras else "."
    args = ["-e", target, "pip"]  # pip: tests/packaging/test_env_files.py dry-runs the pip sections
    if CONSTRAINTS.is_file():
        args += ["-c", str(CONSTRAINTS)]
    session.install(*args)


def pytest_args(session: nox.Session) -> list[str]:
    return list(session.posargs) or ["-q"]


# ------------------------------------------------------------------ test sessions


@nox.session(name="tests-cpu", python=PYTHONS)
def tests_cpu(session: nox.Session) -> None:
    """The suite with CPU-only JAX."""
    install_project(session, "cpu", "numba", "test")
    session.run("python", "-m", "pytest", *pytest_args(session))


BACKEND_TESTS = [
    "tests/custom_kernel/test_custom_kernel_cpu_backends.py",
    "tests/custom_kernel/test_custom_kernel_backends.py",
    "tests/custom_kernel/test_triton_kernel.py",
    "tests/custom_kernel/test_custom_kernel_remember.py",
    "tests/custom_kernel/test_custom_kernel_fingerprint.py",
]


@nox.session(name="tests-backends", python="3.11")
def tests_backends(session: nox.Session) -> None:
    """XLACustomKernel's library backends with CPU-only JAX, Warp and Triton installed."""
    install_project(session, "cpu", "numba", "test", "warp", "triton")
    session.run("python", "-m", "pytest", *BACKEND_TESTS, *pytest_args(session))


@nox.session(name="tests-slow", python="3.11")
def tests_slow(session: nox.Session) -> None:
    """The long variants (marker ``slow``) with CPU-only JAX: stress, many kill trials."""
    install_project(session, "cpu", "numba", "test")
    session.run("python", "-m", "pytest", "-m", "slow", *pytest_args(session))


_HERE_CHECK = """
import importlib.metadata as md, json, os, re, sys
from pathlib import Path
root = Path(sys.argv[1])
out = {"python": sys.executable, "prefix": sys.prefix, "conda_prefix": os.environ.get("CONDA_PREFIX")}
try:
    import brainevent
    out["brainevent"] = brainevent.__file__
except ImportError as exc:
    out["brainevent"] = None
    out["import_error"] = str(exc)
missing = []
for req in md.requires("brainevent") or []:
    if 'extra == "test"' not in req:
        continue
    name = re.split(r"[\\[<>=!~;\\s]", req, maxsplit=1)[0]
    try:
        md.version(name)
    except md.PackageNotFoundError:
        missing.append(name)
out["missing_test_tools"] = missing
out["versions"] = {}
for dist in ("jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda13-plugin", "numpy", "numba"):
    try:
        out["versions"][dist] = md.version(dist)
    except md.PackageNotFoundError:
        pass
print("HERE " + json.dumps(out))
"""

_PROBE = """
import json
from brainevent.toolchain.cuda_driver import probe_devices
from brainevent.errors import BrainEventError
from brainevent.toolchain.nvcc import find_nvcc
p = probe_devices()
out = {"gpus": [f"{d.name} (sm_{d.major}{d.minor})" for d in p.devices] if p.available else [],
       "gpu_reason": p.reason}
try:
    i = find_nvcc()
    out["nvcc"] = {"path": i.path, "version": list(i.version), "found_via": i.found_via}
except BrainEventError as exc:
    out["nvcc_error"] = str(exc)
print("PROBE " + json.dumps(out))
"""


def _probe(session: nox.Session, env: dict[str, str]) -> dict[str, object]:
    output = session.run("python", "-c", _PROBE, env=env, silent=True) or ""
    for line in str(output).splitlines():
        if line.startswith("PROBE "):
            result: dict[str, object] = json.loads(line[len("PROBE ") :])
            return result
    session.error(f"the toolchain probe printed no result:\n{output}")
    return {}  # not reached


def _json_line(session: nox.Session, prefix: str, code: str, *args: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    """Runs `python -c code` quietly and returns the JSON it prints after `prefix`."""
    run = {"env": env or {}, "silent": True, "external": True, "log": False}
    output = session.run("python", "-c", code, *args, **run) or ""
    for line in str(output).splitlines():
        if line.startswith(prefix):
            return json.loads(line[len(prefix) :])
    session.error(f"the check printed no result:\n{output}")
    return {}  # not reached


@nox.session(name="tests-here", venv_backend="none")
def tests_here(session: nox.Session) -> None:
    """The suite in the current environment (e.g. a conda environment): nothing is installed."""
    here = _json_line(session, "HERE ", _HERE_CHECK, str(ROOT))
    session.log(f"python {here['python']} (prefix {here['prefix']})")
    conda = here.get("conda_prefix")
    if conda and os.path.realpath(conda) != os.path.realpath(here["prefix"]):
        session.warn(f"CONDA_PREFIX is {conda} but `python` is {here['python']}: not that environment's")
    fix = "pip install -e '.[test]'"
    module = here.get("brainevent")
    if module is None:
        session.error(f"brainevent does not import ({here.get('import_error')}): {fix}")
    if not Path(module).resolve().is_relative_to(ROOT / "src"):
        session.error(f"brainevent is imported from {module}, not from this checkout: {fix}")
    if here["missing_test_tools"]:
        missing = ", ".join(here["missing_test_tools"])
        session.error(f"the test extra is not installed (missing: {missing}): {fix}")
    session.log("versions: " + ", ".join(f"{k} {v}" for k, v in here["versions"].items()))
    platforms = os.environ.get("JAX_PLATFORMS", "cpu")  # for the probe only: no plugin traceback
    probe = _json_line(session, "PROBE ", _PROBE, env={"JAX_PLATFORMS": platforms})
    gpus = probe.get("gpus") or []
    session.log(f"GPUs: {', '.join(gpus)}" if gpus else f"no CUDA device ({probe.get('gpu_reason')})")
    nvcc = probe.get("nvcc")
    if isinstance(nvcc, dict):
        version = ".".join(map(str, nvcc["version"]))
        session.log(f"nvcc {nvcc['path']} (CUDA {version}, found via {nvcc['found_via']})")
    else:
        session.log(f"no nvcc: compile-only tests skip ({str(probe.get('nvcc_error', '')).splitlines()[:1]})")
    session.run("python", "-m", "pytest", *pytest_args(session), external=True)


def cuda_session(session: nox.Session, major: int) -> None:
    # warp and triton: the GPU tests of every XLACustomKernel backend run where a GPU is found.
    install_project(session, f"cuda{major}", "numba", "test", "warp", "triton")
    env: dict[str, str] = {}
    if "JAX_PLATFORMS" not in os.environ:
        env["JAX_PLATFORMS"] = "cpu"  # for the probe only: no plugin traceback without a GPU
    probe = _probe(session, env)
    gpus = probe.get("gpus") or []
    if gpus:
        session.log(f"GPUs: {', '.join(map(str, gpus))}: GPU tests run")
        env.pop("JAX_PLATFORMS", None)
    else:
        session.log(f"no CUDA device ({probe.get('gpu_reason')}): GPU tests skip with that reason")
    nvcc = probe.get("nvcc")
    if isinstance(nvcc, dict):
        version = ".".join(map(str, nvcc["version"]))
        session.log(
            f"compile-only tests use nvcc {nvcc['path']} (CUDA {version}, found via {nvcc['found_via']})"
        )
        explicit = "BRAINEVENT_NVCC" in os.environ
        if major == 13 and not explicit and not str(nvcc["found_via"]).startswith("pip-wheel:"):
            session.error("tests-cuda13 must compile with the nvcc of the nvidia-cuda-nvcc wheel")
        if nvcc["version"][0] != major:
            session.warn(
                f"that nvcc is CUDA {version}, not CUDA {major}: the CUDA {major} stack's own "
                f"nvcc was not found. Point BRAINEVENT_NVCC at a CUDA {major} nvcc "
                "(e.g. conda's cuda-nvcc) to test the real stack."
            )
    else:
        first = str(probe.get("nvcc_error", "")).splitlines()[:1]
        session.log(f"no nvcc ({first[0] if first else 'unknown'}): compile-only tests skip")
        if major == 13:
            session.error("tests-cuda13 must find the nvcc of the nvidia-cuda-nvcc wheel")
    session.run("python", "-m", "pytest", *pytest_args(session), env=env)


@nox.session(name="tests-cuda12", python="3.11")
def tests_cuda12(session: nox.Session) -> None:
    """The suite with jax[cuda12] (nvcc from a CUDA 12 toolkit, if one is found)."""
    cuda_session(session, 12)


@nox.session(name="tests-cuda13", python="3.11")
def tests_cuda13(session: nox.Session) -> None:
    """The suite with jax[cuda13]; compile-only tests use the wheel's nvcc."""
    cuda_session(session, 13)


# ----------------------------------------------------------------------- compatibility


@nox.session(python="3.11")
def compat(session: nox.Session) -> None:
    """brainevent 0.2.1's own kernel-toolchain tests, imports rewritten, run against this checkout.

    ``nox -s compat`` runs them on the CPU; ``nox -s compat -- --gpu`` installs the CUDA 13
    stack and Numba-CUDA and needs a GPU. Other arguments go to pytest. The 0.2.1 wheel is
    downloaded at run time (tests/compat/run021.py says what is skipped and why).
    """
    gpu = "--gpu" in session.posargs
    pytest_rest = [arg for arg in session.posargs if arg != "--gpu"]
    install_project(session, "cuda13" if gpu else "cpu", "numba-cuda" if gpu else "numba", "test")
    # 0.2.1's Numba tests import brainstate (its x64 switch); nothing of ours needs it.
    args = ["brainstate"]
    if CONSTRAINTS.is_file():
        args += ["-c", str(CONSTRAINTS)]
    session.install(*args)
    runner = ["python", str(ROOT / "tests" / "compat" / "run021.py")]
    if gpu:
        runner.append("--gpu")
    session.run(*runner, "--workdir", session.create_tmp(), "--", *(pytest_rest or ["-q"]))


# ------------------------------------------------------------------------- mutation


@nox.session(python="3.11")
def mutation(session: nox.Session) -> None:
    """mutmut over [tool.mutmut]'s modules; ``-- <mutant names>`` re-runs only those.

    Two workers by default (``BRAINEVENT_MUTATION_JOBS`` sets another number): the run is
    sized for a 2-CPU machine, about 20 minutes there. Survivors are listed at the end;
    ``mutmut show <name>`` prints one's diff.
    """
    install_project(session, "cpu", "dev")
    jobs = os.environ.get("BRAINEVENT_MUTATION_JOBS", "2")
    env = {"JAX_PLATFORMS": "cpu"}  # the tests it runs are CPU tests
    session.run("mutmut", "run", "--max-children", jobs, *session.posargs, env=env)
    session.run("mutmut", "results", env=env)


# ----------------------------------------------------------------------------- lint


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    """ruff check, ruff format --check, mypy, hadolint, shellcheck."""
    install_project(session, "dev")
    session.run("ruff", "check", ".")
    # Markdown examples are kept as written (ruff >= 0.17 would reformat them).
    session.run("ruff", "format", "--check", "--extend-exclude", "*.md", ".")
    session.run("mypy")
    session.run("hadolint", "Dockerfile")
    session.run("shellcheck", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docker").glob("*.sh")))


# ----------------------------------------------------------------------------- docs


class _Rendered(HTMLParser):
    """Links and Python code blocks of one rendered Markdown page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.python_blocks: list[str] = []
        self._code: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "a" and values.get("href"):
            self.links.append(str(values["href"]))
        elif tag == "img" and values.get("src"):
            self.links.append(str(values["src"]))
        elif tag == "code" and values.get("class") == "language-python":
            self._code = []

    def handle_data(self, data: str) -> None:
        if self._code is not None:
            self._code.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "code" and self._code is not None:
            self.python_blocks.append("".join(self._code))
            self._code = None


def render(session: nox.Session, page: Path) -> _Rendered:
    html = session.run("markdown-it", "--enable-tables", str(page), silent=True) or ""
    parsed = _Rendered()
    parsed.feed(str(html))
    return parsed


def broken_links(page: Path, links: list[str]) -> list[str]:
    broken = []
    for link in links:
        parts = urlsplit(link)
        if parts.scheme or parts.netloc or not parts.path:
            continue  # external (not fetched: offline) or a same-page anchor
        target = (page.parent / unquote(parts.path)).resolve()
        if not target.exists():
            broken.append(f"{page.relative_to(ROOT)}: {link} -> {os.path.relpath(target, ROOT)}")
    return broken


def _table_problems(pages: list[Path]) -> list[str]:
    """Tables that would not render as written (text glued to a table, wrong cell counts)."""
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "support"))
    try:
        from markdown_tables import table_problems
    finally:
        sys.path.pop(0)
    return [p for page in pages for p in table_problems(page.read_text(), str(page.relative_to(ROOT)))]


@nox.session(python="3.11")
def docs(session: nox.Session) -> None:
    """The site builds (strict); every local link in README.md and docs/ resolves; the README example runs."""
    install_project(session, "docs")
    tmp = Path(session.create_tmp()).resolve()
    if (ROOT / "mkdocs.yml").is_file():
        session.run("mkdocs", "build", "--strict", "--quiet", "--site-dir", str(tmp / "site"))
        session.log(f"site built into {tmp / 'site'}")
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    problems: list[str] = []
    readme_blocks: list[str] = []
    checked = 0
    for page in pages:
        rendered = render(session, page)
        checked += len(rendered.links)
        problems += broken_links(page, rendered.links)
        if page.name == "README.md":
            readme_blocks = rendered.python_blocks
    if problems:
        session.error("broken links:\n  " + "\n  ".join(problems))
    session.log(f"{len(pages)} pages, {checked} links: every local link resolves")
    tables = _table_problems(pages)
    if tables:
        session.error("tables that do not render as written:\n  " + "\n  ".join(tables))
    session.log("every table renders as written (tests/support/markdown_tables.py)")
    if not readme_blocks:
        session.error("README.md has no Python example to run")
    env = {"BRAINEVENT_CACHE_DIR": str(tmp / "cache")}
    for i, block in enumerate(readme_blocks):
        script = tmp / f"readme_example_{i}.py"
        script.write_text(block)
        with session.chdir(tmp):
            session.run("python", str(script), env=env)
    session.log(f"README: {len(readme_blocks)} Python example(s) ran")


# ---------------------------------------------------------------------- containers


def _docker_daemon() -> bool:
    docker = shutil.which("docker")
    if docker is None:
        return False
    try:
        return subprocess.run([docker, "info"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _check_image(target: str, tag: str, *args: str) -> list[str]:
    return [
        str(ROOT / "docker" / "check_image.py"),
        "--engine",
        "docker",
        "--image",
        tag,
        "--target",
        target,
        *args,
    ]


@nox.session(venv_backend="none")
def docker(session: nox.Session) -> None:
    """Build each image target, run the suite in it, check its builds (default target: cpu)."""
    targets = list(session.posargs) or ["cpu"]
    if _docker_daemon():
        for target in targets:
            tag = f"brainevent:{target}"
            session.run("docker", "build", "--target", target, "-t", tag, ".", external=True)
            run = ["docker", "run", "--rm"]
            if target != "cpu" and shutil.which("nvidia-smi"):
                run += ["--gpus", "all"]
            session.run(*run, tag, external=True)
            session.run(sys.executable, *_check_image(target, tag), external=True)
    elif shutil.which("podman"):
        # The image checks run with nox's own interpreter, whatever `python3` is on PATH.
        env = {"CHECK_PYTHON": sys.executable}
        session.run("bash", str(ROOT / "docker" / "build-podman.sh"), *targets, env=env, external=True)
    else:
        session.skip("no container engine: no docker daemon answers and podman is not installed")


@nox.session(name="docker-cuda13", python="3.11")
def docker_cuda13(session: nox.Session) -> None:
    """The cuda13 image as a reproducible CUDA build machine (no GPU needed).

    Builds the image; in it, `brainevent doctor` must find nvcc in the pip wheel and the
    compile-only tests (`-m nvcc`) must pass; `brainevent build` of docker/kernels/cuda
    for sm_80 and sm_90 runs twice into fresh volumes and must give byte-identical
    artifacts with SASS for both archs and PTX for sm_90. Then this session's venv (the
    same wheel and pins, outside any container) builds the same sources, which must give
    the same bytes. The artifacts and summary.json land in .nox/docker-cuda13/tmp/artifacts.
    The full suite in the image is `nox -s docker -- cuda13`.
    """
    if not _docker_daemon() and not shutil.which("podman"):
        session.skip("no container engine: no docker daemon answers and podman is not installed")
    args = ["-c", str(CONSTRAINTS)] if CONSTRAINTS.is_file() else []
    session.install(*args, ".[cuda13]")  # what the image installs: the wheel, not editable
    artifacts = Path(session.create_tmp()) / "artifacts"
    shutil.rmtree(artifacts, ignore_errors=True)
    check = ["--outside", str(Path(session.bin) / "python"), "--artifacts", str(artifacts)]
    if _docker_daemon():
        tag = "brainevent:cuda13"
        session.run("docker", "build", "--target", "cuda13", "-t", tag, ".", external=True)
        session.run("python", *_check_image("cuda13", tag, *check))
    else:
        env = {"SUITE_ARGS": "skip", "CHECK_ARGS": " ".join(check)}
        session.run("bash", str(ROOT / "docker" / "build-podman.sh"), "cuda13", env=env, external=True)
    session.log(f"artifacts and summary.json: {artifacts}")


# ------------------------------------------------------------------------------ lock


@nox.session(python="3.11")
def lock(session: nox.Session) -> None:
    """Re-pin the tested stack into docker/constraints.txt (one set valid for 3.11+)."""
    session.install("uv")
    extras = [arg for extra in LOCKED_EXTRAS for arg in ("--extra", extra)]
    session.run(
        "uv",
        "pip",
        "compile",
        "pyproject.toml",
        "--universal",
        "--python-version",
        "3.11",
        *extras,
        "--no-header",
        "--no-annotate",
        "-o",
        str(CONSTRAINTS),
    )
