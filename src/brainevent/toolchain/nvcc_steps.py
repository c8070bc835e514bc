"""Where nvcc may be: the frozen tables of places and the ordered search steps over them.

Each step is a small pure function of a :class:`SearchContext` (the environment gathered
once) that proposes candidates; :func:`brainevent.toolchain.nvcc.find_nvcc` runs them in
order and keeps the first usable one.
"""

from __future__ import annotations

import functools
import os
import shutil
import site
import sys
from collections.abc import Callable
from dataclasses import dataclass

from .. import config
from .nvcc_probe import _EXE, Candidate

# ------------------------------------------------------------------------ the tables


@dataclass(frozen=True)
class WheelLayout:
    """Where one NVIDIA pip wheel puts nvcc, relative to site-packages."""

    package: str  # the PyPI name, used in found_via and messages
    bin_dir: str  # directory relative to site-packages
    # For wheels that ship a bin/ without nvcc: the file that shows the wheel is there.
    marker: str | None = None
    why_no_nvcc: str = ""


WHEEL_LAYOUTS: tuple[WheelLayout, ...] = (
    WheelLayout("nvidia-cuda-nvcc", "nvidia/cu13/bin"),
    WheelLayout(
        "nvidia-cuda-nvcc-cu12",
        "nvidia/cuda_nvcc/bin",
        marker="ptxas",
        why_no_nvcc="CUDA 12 pip wheels ship ptxas but no nvcc",
    ),
)

DEFAULT_ROOTS: tuple[str, ...] = ("/usr/local/cuda", "/opt/cuda")


@dataclass(frozen=True)
class SearchContext:
    """The inputs of one search, gathered once so steps stay pure and testable."""

    explicit: str | None
    env_nvcc: str | None
    site_dirs: tuple[str, ...]
    conda_prefix: str | None
    cuda_home: str | None
    cuda_path: str | None
    path_env: str | None
    default_roots: tuple[str, ...]
    prefer: str = "pip"  # "system": the toolkit steps come before NVIDIA's wheels


# ------------------------------------------------------------------- search steps


def _nvcc_in(directory: str) -> str:
    return os.path.join(directory, _EXE)


def _explicit_to_path(value: str) -> str:
    # Accept an nvcc path, a toolkit root or its bin/, or a bare command name.
    if os.path.isdir(value):
        for sub in ("bin", ""):
            nvcc = _nvcc_in(os.path.join(value, sub))
            if os.path.isfile(nvcc):
                return nvcc
        return _nvcc_in(os.path.join(value, "bin"))
    if os.sep not in value and not os.path.exists(value):
        return shutil.which(value) or value
    return value


def _step_explicit(ctx: SearchContext) -> list[Candidate]:
    found = []
    if ctx.explicit:
        found.append(Candidate(_explicit_to_path(ctx.explicit), "argument"))
    if ctx.env_nvcc:
        found.append(Candidate(_explicit_to_path(ctx.env_nvcc), f"env:{config.NVCC.name}"))
    return found


def _step_wheels(ctx: SearchContext) -> list[Candidate]:
    found = []
    for sp in ctx.site_dirs:
        for layout in WHEEL_LAYOUTS:
            bin_dir = os.path.join(sp, *layout.bin_dir.split("/"))
            nvcc = _nvcc_in(bin_dir)
            via = f"pip-wheel:{layout.package}"
            if os.path.exists(nvcc):
                found.append(Candidate(nvcc, via))
            elif layout.marker and os.path.exists(os.path.join(bin_dir, layout.marker)):
                # Recorded already rejected: the wheel is there but carries no nvcc.
                found.append(Candidate(nvcc, via, f"rejected: {layout.why_no_nvcc}"))
    return found


def _step_conda(ctx: SearchContext) -> list[Candidate]:
    if not ctx.conda_prefix:
        return []
    return [Candidate(_nvcc_in(os.path.join(ctx.conda_prefix, "bin")), "conda")]


def _step_cuda_env(ctx: SearchContext) -> list[Candidate]:
    found = []
    for name, root in (("CUDA_HOME", ctx.cuda_home), ("CUDA_PATH", ctx.cuda_path)):
        if root:
            found.append(Candidate(_nvcc_in(os.path.join(root, "bin")), f"env:{name}"))
    return found


def _step_path(ctx: SearchContext) -> list[Candidate]:
    if not ctx.path_env:
        return []
    hit = shutil.which(_EXE, path=ctx.path_env)
    return [Candidate(hit, "PATH")] if hit else []


def _step_defaults(ctx: SearchContext) -> list[Candidate]:
    return [Candidate(_nvcc_in(os.path.join(r, "bin")), f"default:{r}") for r in ctx.default_roots]


@dataclass(frozen=True)
class SearchStep:
    name: str  # as shown in the "searched" list of an error
    run: Callable[[SearchContext], list[Candidate]]
    if_empty: Callable[[SearchContext], str]  # what to say when it proposed nothing
    strict: bool = False  # a rejected candidate here is an error, not a fall-through


SEARCH_STEPS: tuple[SearchStep, ...] = (
    SearchStep(
        "the nvcc argument, then BRAINEVENT_NVCC",
        _step_explicit,
        lambda ctx: f"none given, {config.NVCC.name} unset",
        strict=True,
    ),
    SearchStep(
        "NVIDIA pip wheels in site-packages",
        _step_wheels,
        lambda ctx: f"no NVIDIA nvcc wheel in {len(ctx.site_dirs)} site-packages directories",
    ),
    SearchStep("$CONDA_PREFIX/bin", _step_conda, lambda ctx: "CONDA_PREFIX unset"),
    SearchStep(
        "$CUDA_HOME/bin, then $CUDA_PATH/bin",
        _step_cuda_env,
        lambda ctx: "CUDA_HOME and CUDA_PATH unset",
    ),
    SearchStep("PATH", _step_path, lambda ctx: "no nvcc on PATH"),
    SearchStep("default toolkit roots", _step_defaults, lambda ctx: "none configured"),
)


def ordered_steps(prefer: str) -> tuple[SearchStep, ...]:
    """The search steps in the order of ``BRAINEVENT_NVCC_PREFER`` ("pip" or "system")."""
    if prefer != "system":
        return SEARCH_STEPS
    explicit, wheels, *system = SEARCH_STEPS
    return (explicit, *system, wheels)


def site_package_dirs() -> tuple[str, ...]:
    """Every site-packages-like directory, sys.path order first, without duplicates.

    We look at directories rather than ``import nvidia``: ``nvidia`` may be a namespace
    package or, with some cu12 wheels, a regular one that hides the others. Remembered
    per ``sys.path``: resolving every entry costs more than a cache hit may take.
    """
    return _site_package_dirs(tuple(sys.path))


@functools.lru_cache(maxsize=8)
def _site_package_dirs(path: tuple[str, ...]) -> tuple[str, ...]:
    dirs: list[str] = [p for p in path if p]
    dirs.extend(getattr(site, "getsitepackages", list)())
    user = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if user:
        dirs.append(user)
    seen: set[str] = set()
    result = []
    for d in dirs:
        real = os.path.realpath(d)
        if real not in seen and os.path.isdir(real):
            seen.add(real)
            result.append(d)
    return tuple(result)
