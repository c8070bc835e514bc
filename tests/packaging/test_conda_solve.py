"""The conda environment files solve against a model of conda-forge's recipes (offline).

conda-forge's repodata cannot be fetched here, so the packages whose constraints interact
(JAX, jaxlib's CPU and CUDA builds, the CUDA 12.9 / 13.0 components, the compilers) are
modelled from their feedstock recipes, and the real solver (py-rattler's) solves each
file's conda dependencies against that model. What each record encodes, and where it
comes from:

- jaxlib (jaxlib-feedstock ``recipe/recipe.yaml``): one build per Python (3.11-3.14) and
  variant; the build string is ``cpu_py3XY...`` or ``cuda129_py3XY...`` / ``cuda130_...``
  (``"cuda" + cuda_compiler_version without the dot``; the variants are 12.9 and 13.0).
  A CUDA build requires ``__cuda``, ``cuda-nvcc-tools`` and the CUDA libraries, among them
  ``libcublas >=<the version built against>,<next major`` (libcublas-dev's run_exports,
  ``pin_subpackage(max_pin="x")``); CUDA 13 builds need glibc 2.28.
- jax (jax-feedstock): ``jaxlib >=V,<=V`` for jax V, and ``numpy >=2.0``.
- CUDA components (cuda-nvcc-impl, libcublas, cuda-cudart feedstocks): version X.Y.* of a
  component requires ``cuda-version >=X.Y,<X.(Y+1)`` (``pin_compatible(max_pin="x.x")``).
- nvcc (cuda-nvcc-impl-feedstock): ``cuda-nvcc-tools`` constrains ``gcc_impl_linux-64``
  to ``>=6,<15`` for 12.9 and ``<16`` for 13.0; 12.6 (CUDA 12.4-12.6 accept gcc <= 13) to
  ``<14``. ``cuda-nvcc`` (cuda-nvcc-feedstock) requires ``cuda-nvcc_linux-64`` of its
  version and the activation packages ``gcc_linux-64`` / ``gxx_linux-64``.
- compilers (ctng-compilers-feedstock): ``gxx`` V requires ``gxx_impl_linux-64`` V, which
  requires ``gcc_impl_linux-64`` V.

Packages outside the model (pytest, nox, ...) get one record at the lower bound the file
asks for, without dependencies: the model checks how the CUDA and JAX pins fit together,
not that every tool exists on conda-forge.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CUDA12_FILE = ROOT / "environment.yml"

yaml = pytest.importorskip("yaml", reason="PyYAML is not installed (pip install pyyaml)")
rattler = pytest.importorskip("rattler", reason="py-rattler is not installed (pip install py-rattler)")

pytestmark = pytest.mark.skipif(not CUDA12_FILE.is_file(), reason="no environment.yml: not a source checkout")

JAX_VERSION = "0.10.2"
PYTHONS = ("3.11", "3.12", "3.13", "3.14")
# CUDA release -> (libcublas, cuda-nvcc / nvcc-tools, cudart, gcc_impl upper bound (exclusive)).
CUDA = {
    "12.6": ("12.6.4.1", "12.6.85", "12.6.77", 14),
    "12.9": ("12.9.1.4", "12.9.86", "12.9.79", 15),
    "13.0": ("13.0.0.19", "13.0.88", "13.0.96", 16),
}
JAXLIB_CUDA_VARIANTS = {"cuda129": "12.9", "cuda130": "13.0"}  # no cuda126 build exists
GCC = ("12.4.0", "13.4.0", "14.3.0", "15.2.0")


def _next_minor(release: str) -> str:
    major, minor = release.split(".")
    return f"{major}.{int(minor) + 1}.0a0"


def _record(name: str, version: str, depends: list[str], build: str = "0", **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "version": version,
        "build": build,
        "build_number": int(build.rsplit("_", 1)[-1]) if build.rsplit("_", 1)[-1].isdigit() else 0,
        "depends": depends,
        **extra,
    }


def model_records() -> list[dict[str, Any]]:
    """The linux-64 records of the model (see the module docstring)."""
    records = [_record("python", f"{py}.0", [], build="h0000000_0_cpython") for py in PYTHONS]
    records += [
        _record("pip", "25.3", ["python >=3.9"]),
        _record("numpy", "2.3.5", ["python >=3.11"]),
        _record("scipy", "1.16.3", ["python >=3.11"]),
        _record("ml_dtypes", "0.5.4", ["python >=3.11"]),
        _record("opt_einsum", "3.4.0", ["python >=3.9"]),
        _record(
            "jax",
            JAX_VERSION,
            [
                "python >=3.11",
                "numpy >=2.0",
                "scipy >=1.14",
                "ml_dtypes >=0.5.0",
                "opt_einsum",
                f"jaxlib >={JAX_VERSION},<={JAX_VERSION}",
            ],
        ),
    ]
    for py in PYTHONS:
        tag = py.replace(".", "")
        base = [f"python >={py},<{_next_minor(py)}", "scipy >=1.9", "ml_dtypes >=0.2.0"]
        records.append(
            _record("jaxlib", JAX_VERSION, [*base, "__glibc >=2.17"], build=f"cpu_py{tag}h1a2b3c4_0")
        )
        for variant, release in JAXLIB_CUDA_VARIANTS.items():
            cublas = CUDA[release][0]
            major = int(release.split(".")[0])
            records.append(
                _record(
                    "jaxlib",
                    JAX_VERSION,
                    [
                        *base,
                        "__cuda",
                        f"__glibc >={'2.28' if major >= 13 else '2.17'}",
                        "cuda-nvcc-tools",
                        "libcublas-dev",
                        f"libcublas >={cublas},<{major + 1}.0a0",
                    ],
                    build=f"{variant}_py{tag}h1a2b3c4_200",
                    constrains=[f"jax >={JAX_VERSION}"],
                )
            )
    for release, (cublas, nvcc, cudart, gcc_below) in CUDA.items():
        in_release = f"cuda-version >={release},<{_next_minor(release)}"
        records += [
            _record(
                "cuda-version",
                release,
                [],
                constrains=[f"__cuda >={release.split('.')[0]}", f"cudatoolkit {release}|{release}.*"],
            ),
            _record("libcublas", cublas, [in_release]),
            _record("libcublas-dev", cublas, [f"libcublas =={cublas}", in_release]),
            _record("cuda-cudart-dev_linux-64", cudart, [in_release]),
            _record("cuda-cudart-dev", cudart, [f"cuda-cudart-dev_linux-64 =={cudart}", in_release]),
            _record(
                "cuda-nvcc-tools",
                nvcc,
                [in_release],
                constrains=[f"gcc_impl_linux-64 >=6,<{gcc_below}.0a0"],
            ),
            _record(
                "cuda-nvcc_linux-64",
                nvcc,
                [f"cuda-nvcc-tools {nvcc}.*", f"cuda-cudart-dev_linux-64 {release}.*"],
            ),
            _record("cuda-nvcc", nvcc, [f"cuda-nvcc_linux-64 {nvcc}.*", "gcc_linux-64", "gxx_linux-64"]),
        ]
    for gcc in GCC:
        records += [
            _record("gcc_impl_linux-64", gcc, []),
            _record("gxx_impl_linux-64", gcc, [f"gcc_impl_linux-64 =={gcc}"]),
            _record("gcc", gcc, [f"gcc_impl_linux-64 =={gcc}"]),
            _record("gxx", gcc, [f"gxx_impl_linux-64 =={gcc}", f"gcc =={gcc}"]),
            _record("gcc_linux-64", gcc, [f"gcc_impl_linux-64 {gcc}.*"]),
            _record("gxx_linux-64", gcc, [f"gxx_impl_linux-64 {gcc}.*", f"gcc_linux-64 =={gcc}"]),
        ]
    return records


def _stubs(specs: list[str], modelled: set[str]) -> list[dict[str, Any]]:
    """One dependency-free record per package outside the model, at the requested lower bound."""
    stubs = []
    for text in specs:
        spec = rattler.MatchSpec(text, strict=True)
        name = spec.name.normalized
        if name in modelled:
            continue
        lower = re.search(r">=\s*([\w.]+)", str(spec.version or ""))
        stubs.append(_record(name, lower.group(1) if lower else "1.0", []))
    return stubs


# The solve runs in a child process that leaves through os._exit: py-rattler's solver
# threads can crash the interpreter while it shuts down, which must not end a test run.
_SOLVE = r"""
import asyncio, json, os, sys
from pathlib import Path
import rattler

request = json.load(sys.stdin)
directory = Path(request["channel"])
sources = []
for subdir, content in (("linux-64", request["packages"]), ("noarch", {})):
    (directory / subdir).mkdir(parents=True, exist_ok=True)
    path = directory / subdir / "repodata.json"
    path.write_text(json.dumps({"info": {"subdir": subdir}, "packages": content}))
    sources.append(rattler.SparseRepoData(rattler.Channel(str(directory)), subdir, path))
virtual = [
    rattler.GenericVirtualPackage(rattler.PackageName(n), rattler.Version(v), rattler.BuildString("0"))
    for n, v in request["virtual"]
]
try:
    job = rattler.solve_with_sparse_repodata(request["specs"], sources, virtual_packages=virtual)
    solved = asyncio.run(job)
    answer = {"solved": {r.name.normalized: [str(r.version), str(r.build)] for r in solved}}
except Exception as exc:
    answer = {"error": f"{type(exc).__name__}: {exc}"}
sys.stdout.write(json.dumps(answer))
sys.stdout.flush()
os._exit(0)
"""


class Unsolvable(Exception):
    """The solver found no solution; the message is its explanation."""


def solve(specs: list[str], tmp_path: Path, *, cuda: str | None = "13.0") -> dict[str, tuple[str, str]]:
    """{name: (version, build)} of the solution; raises Unsolvable with the solver's reasons."""
    records = model_records()
    modelled = {r["name"] for r in records}
    packages = {
        f"{r['name']}-{r['version']}-{r['build']}.tar.bz2": dict(r, subdir="linux-64")
        for r in records + _stubs(specs, modelled)
    }
    virtual = [("__unix", "0"), ("__linux", "6.1"), ("__glibc", "2.36")]
    if cuda is not None:
        virtual.append(("__cuda", cuda))
    request = {"channel": str(tmp_path / "channel"), "packages": packages, "specs": specs, "virtual": virtual}
    done = subprocess.run(
        [sys.executable, "-c", _SOLVE], input=json.dumps(request), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and done.stdout, done.stderr[-3000:]
    answer = json.loads(done.stdout)
    if "error" in answer:
        raise Unsolvable(answer["error"])
    return {name: (version, build) for name, (version, build) in answer["solved"].items()}


def conda_specs(path: Path) -> list[str]:
    return [d for d in yaml.safe_load(path.read_text())["dependencies"] if isinstance(d, str)]


def _major_minor(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".")[:2])


# ----------------------------------------------------------------------------- tests


def test_cuda12_file_solves_to_a_cuda12_stack_whose_nvcc_accepts_its_gcc(tmp_path: Path) -> None:
    solved = solve(conda_specs(CUDA12_FILE), tmp_path)
    assert solved["jaxlib"][1].startswith("cuda12"), solved["jaxlib"]
    nvcc = _major_minor(solved["cuda-nvcc"][0])
    assert nvcc[0] == 12 and solved["cuda-version"][0] == f"{nvcc[0]}.{nvcc[1]}"
    from brainevent.toolchain.host_compat import host_limit_for

    limit = host_limit_for((nvcc[0], nvcc[1]))
    assert limit is not None and _major_minor(solved["gxx"][0])[0] <= limit.gcc_max
    # The activation package that sets CXX comes in with cuda-nvcc, at gxx's version.
    assert solved["gxx_linux-64"][0] == solved["gxx"][0]


def test_cuda12_file_needs_a_cuda_driver_or_the_override(tmp_path: Path) -> None:
    """Without __cuda (no driver) no CUDA jaxlib is installable: the file says CONDA_OVERRIDE_CUDA."""
    with pytest.raises(Unsolvable, match="__cuda"):
        solve(conda_specs(CUDA12_FILE), tmp_path, cuda=None)
    assert "CONDA_OVERRIDE_CUDA=12.9" in CUDA12_FILE.read_text()


def test_cuda126_pins_of_the_past_do_not_solve(tmp_path: Path) -> None:
    """The model catches the mistake it was made for: cuda-version 12.6 with a CUDA 12 jaxlib."""
    old = [s for s in conda_specs(CUDA12_FILE) if not s.startswith(("cuda-version", "gxx", "jaxlib"))]
    old += ["cuda-version=12.6", "gxx>=12,<14", "jaxlib[version='>=0.10.2,<0.13', build='*cuda12*']"]
    with pytest.raises(Unsolvable, match=r"cuda-version >=12\.9,<12\.10"):
        solve(old, tmp_path)


def test_model_gcc_limits_agree_with_host_limits() -> None:
    from brainevent.toolchain.host_compat import host_limit_for

    for release, (*_, gcc_below) in CUDA.items():
        major, minor = (int(p) for p in release.split("."))
        row = host_limit_for((major, minor))
        assert row is not None and row.gcc_max == gcc_below - 1, (release, row)


@pytest.mark.parametrize("name", ["environment-cpu.yml", "environment-cuda13.yml"])
def test_other_files_solve(name: str, tmp_path: Path) -> None:
    path = ROOT / name
    if not path.is_file():
        pytest.skip(f"no {name}")
    solved = solve(conda_specs(path), tmp_path, cuda=None)
    # no CUDA toolkit package; cuda-pathfinder (pure Python, finds NVIDIA libraries) is fine
    assert not any(n.startswith("cuda-") and n != "cuda-pathfinder" for n in solved), sorted(solved)
    if "jaxlib" in solved:
        assert solved["jaxlib"][1].startswith("cpu"), solved["jaxlib"]
