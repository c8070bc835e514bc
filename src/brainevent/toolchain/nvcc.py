"""Find nvcc: an ordered list of small search steps over frozen tables of places.

Every candidate a step proposes is kept, with how it was found (``found_via``) and why
it was accepted or rejected, so that a failed search can say exactly where it looked.
The order (first usable wins):

1. the ``explicit`` argument, then ``BRAINEVENT_NVCC`` (a bad value here is an error,
   never a silent fall-through);
2. NVIDIA's pip wheels in every site-packages directory (JAX's CUDA 13 stack);
3. ``$CONDA_PREFIX/bin``;
4. ``$CUDA_HOME``, then ``$CUDA_PATH``;
5. ``PATH`` (wrapper scripts are followed to the real toolkit);
6. default roots such as ``/usr/local/cuda``.

Only the version check runs a subprocess (``nvcc --version``, memoized per binary);
:func:`nvcc_identity` gives a cache-key identity from ``stat`` alone.
"""

from __future__ import annotations

import functools
import logging
import os
import shlex
import shutil
import site
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .. import config
from ..errors import NvccNotFoundError
from ..fileio import file_identity
from .memo import remembered

logger = logging.getLogger(__name__)

_EXE = "nvcc.exe" if sys.platform == "win32" else "nvcc"
_VERSION_TIMEOUT_S = 30.0


class ToolchainWarning(UserWarning):
    """The toolchain works but something about it is likely to bite later."""


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

# Installed JAX CUDA plugins and the CUDA major each one runs on.
JAX_PLUGINS: tuple[tuple[str, int], ...] = (
    ("jax-cuda12-plugin", 12),
    ("jax-cuda13-plugin", 13),
)

# The oldest Linux driver each CUDA major runs on (NVIDIA's compatibility table).
MIN_DRIVER: dict[int, str] = {12: "525.60.13", 13: "580.65.06"}

_INSTALL_HINT = (
    "Install one of: the CUDA 13 pip wheels "
    '(pip install "nvidia-cuda-nvcc>=13" nvidia-cuda-cccl, which match jax[cuda13]); '
    "conda's toolkit (conda install -c conda-forge cuda-nvcc); or a system CUDA toolkit. "
    "Or point BRAINEVENT_NVCC at an nvcc binary."
)

_CU12_HINT = (
    "CUDA 12 pip wheels (nvidia-cuda-nvcc-cu12, as installed by jax[cuda12] and "
    "brainevent[cuda12]) ship no nvcc, only ptxas. Get a CUDA 12 nvcc in one of two ways: "
    "conda install -c conda-forge cuda-nvcc cuda-version=12.9 in the active conda environment "
    "(environment.yml in brainevent's repository creates one), or a system CUDA 12 toolkit "
    "(NVIDIA's cuda-toolkit-12-9 package, found through CUDA_HOME, PATH or /usr/local/cuda); "
    "an nvidia/cuda:12.x-devel image has one. Or switch to the CUDA 13 wheels, which carry "
    'nvcc: pip install "nvidia-cuda-nvcc>=13" nvidia-cuda-cccl (with jax[cuda13]; '
    "brainevent[cuda13] installs all three). Or point BRAINEVENT_NVCC at an nvcc binary. "
    "brainevent's Installation page (CUDA 12) gives a recipe for each."
)


# --------------------------------------------------------------------- result types


class Candidate(NamedTuple):
    """One place considered: the path, how it was found, and what we made of it."""

    path: str
    found_via: str
    note: str = ""


@dataclass(frozen=True)
class NvccInfo:
    """A usable nvcc."""

    path: str  # the real binary, symlinks and wrapper scripts resolved
    root: str  # the toolkit root (parent of bin/)
    version: tuple[int, int]
    found_via: str
    candidates: tuple[Candidate, ...] = field(default=(), compare=False)

    @property
    def version_string(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"


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


# -------------------------------------------------------------- identity and version


def nvcc_identity(path: str | os.PathLike[str]) -> str:
    """A cheap identity for cache keys: real path, size and mtime; no subprocess."""
    return file_identity(path, missing_ok=False)


def parse_nvcc_version(text: str) -> tuple[int, int] | None:
    """(major, minor) from ``nvcc --version`` output ("... release 13.0, V13.0.88")."""
    for line in text.splitlines():
        _, sep, rest = line.partition("release ")
        if not sep:
            continue
        number = rest.split(",", 1)[0].strip()
        major, _, minor = number.partition(".")
        if major.isdigit() and minor.isdigit():
            return (int(major), int(minor))
    return None


class _Unusable(Exception):
    """Internal: a candidate was looked at and rejected; the message says why."""


def _run(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            list(args),
            capture_output=True,
            text=True,
            timeout=_VERSION_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise _Unusable(f"`{' '.join(args)}` did not answer in {_VERSION_TIMEOUT_S:.0f}s") from None
    except OSError as exc:
        raise _Unusable(f"cannot run it: {exc}") from None


# Memoized on (real path, size, mtime_ns): a rebuilt or upgraded nvcc is asked again.
@functools.lru_cache(maxsize=64)
def _version_of(identity: str, real: str) -> tuple[int, int]:
    return remembered(
        "nvcc-version",
        identity,
        lambda: _probe_version(real),
        encode=list,
        decode=lambda v: (int(v[0]), int(v[1])),
    )


def _probe_version(real: str) -> tuple[int, int]:
    proc = _run([real, "--version"])
    version = parse_nvcc_version(proc.stdout)
    if proc.returncode != 0 or version is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise _Unusable(f"`nvcc --version` failed (exit {proc.returncode}): {tail[0]}")
    return version


def nvcc_version(path: str | os.PathLike[str]) -> tuple[int, int]:
    """The (major, minor) release of an nvcc binary; runs it once per identity."""
    real = os.path.realpath(path)
    try:
        return _version_of(nvcc_identity(real), real)
    except (_Unusable, OSError) as exc:
        raise NvccNotFoundError(f"nvcc at {real} is unusable: {exc}", path=real) from None


def clear_version_cache() -> None:
    _version_of.cache_clear()
    _wrapper_target.cache_clear()
    _find_in_context.cache_clear()


# ---------------------------------------------------------- turning a path into info


def _is_script(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == b"#!"
    except OSError:
        return False


def _real_nvcc_in(directory: str) -> str | None:
    real = os.path.realpath(os.path.join(directory, _EXE))
    return real if os.path.isfile(real) and not _is_script(real) else None


def _target_from_dryrun(script: str) -> str | None:
    # A dry run makes the real nvcc print its own directory as `#$ _HERE_=...` without
    # compiling anything. It does query the host compiler, so it fails without one.
    try:
        proc = _run([script, "-dryrun", "-c", "-x", "cu", os.devnull, "-o", os.devnull])
    except _Unusable:
        return None
    for line in (proc.stderr + proc.stdout).splitlines():
        if line.startswith("#$ _HERE_="):
            return _real_nvcc_in(line.split("=", 1)[1].strip())
    return None


def _target_from_text(script: str) -> str | None:
    # Fallback for wrappers like `exec /usr/local/cuda-13.0/bin/nvcc "$@"`: the first
    # absolute path to a real nvcc binary named in the script.
    try:
        with open(script, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()[1:]  # skip the #! line
    except OSError:
        return None
    for line in lines:
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        for word in words:
            if os.path.isabs(word) and os.path.basename(word) == _EXE:
                real = _real_nvcc_in(os.path.dirname(word))
                if real:
                    return real
    return None


@functools.lru_cache(maxsize=64)
def _wrapper_target(identity: str, script: str) -> str:
    # A wrapper (e.g. /usr/local/bin/nvcc) hides the toolkit root; find the binary it runs.
    return remembered("nvcc-wrapper", identity, lambda: _probe_wrapper(script))


def _probe_wrapper(script: str) -> str:
    real = _target_from_dryrun(script) or _target_from_text(script)
    if real is None:
        raise _Unusable(
            "it is a wrapper script, and neither `nvcc -dryrun` nor its text revealed the real nvcc"
        )
    return real


def _inspect(candidate: Candidate) -> NvccInfo:
    """Validate one candidate; raises _Unusable with the reason it cannot be used."""
    path = candidate.path
    if not os.path.exists(path):
        raise _Unusable("no such file")
    if os.path.isdir(path):
        raise _Unusable("is a directory")
    if not os.access(path, os.X_OK):
        raise _Unusable("not executable")
    real = os.path.realpath(path)
    try:
        if _is_script(real):
            real = _wrapper_target(nvcc_identity(real), real)
        version = _version_of(nvcc_identity(real), real)
    except OSError as exc:  # vanished or unreadable between the checks and the stat
        raise _Unusable(str(exc)) from None
    root = str(Path(real).parent.parent)
    return NvccInfo(real, root, version, candidate.found_via)


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


# ------------------------------------------------------------------------ the search


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


def _context(
    explicit: str | None,
    site_dirs: Sequence[str] | None,
    default_roots: Sequence[str],
) -> SearchContext:
    env = os.environ
    return SearchContext(
        explicit=explicit,
        env_nvcc=config.NVCC.get(),
        site_dirs=tuple(site_dirs) if site_dirs is not None else site_package_dirs(),
        conda_prefix=env.get("CONDA_PREFIX") or None,
        cuda_home=env.get("CUDA_HOME") or None,
        cuda_path=env.get("CUDA_PATH") or None,
        path_env=env.get("PATH"),
        default_roots=tuple(default_roots),
        prefer=config.NVCC_PREFER.get(),
    )


def find_nvcc(
    explicit: str | None = None,
    *,
    site_dirs: Sequence[str] | None = None,
    default_roots: Sequence[str] = DEFAULT_ROOTS,
) -> NvccInfo:
    """Find a usable nvcc; raises :class:`NvccNotFoundError` listing every place searched.

    ``site_dirs`` and ``default_roots`` replace the real ones (for tests). The result
    is remembered per search context (environment and arguments) for the process, so
    loading many modules searches once; a failed search is never remembered.
    """
    return _find_in_context(_context(explicit, site_dirs, default_roots))


@functools.lru_cache(maxsize=16)
def _find_in_context(ctx: SearchContext) -> NvccInfo:
    considered: list[Candidate] = []
    per_step: list[tuple[SearchStep, list[Candidate]]] = []
    for step in ordered_steps(ctx.prefer):
        seen: list[Candidate] = []
        per_step.append((step, seen))
        for cand in step.run(ctx):
            if cand.note:  # already rejected by the step
                seen.append(cand)
                considered.append(cand)
                continue
            try:
                info = _inspect(cand)
            except _Unusable as exc:
                rejected = cand._replace(note=f"rejected: {exc}")
                seen.append(rejected)
                considered.append(rejected)
                if step.strict:
                    raise NvccNotFoundError(
                        f"nvcc given via {cand.found_via} ({cand.path}) is not usable: {exc}. "
                        "Name an nvcc binary or a CUDA toolkit root.",
                        path=cand.path,
                        found_via=cand.found_via,
                        candidates=tuple(considered),
                    ) from None
                continue
            accepted = cand._replace(note=f"accepted: {info.path} (CUDA {info.version_string})")
            considered.append(accepted)
            result = NvccInfo(info.path, info.root, info.version, cand.found_via, tuple(considered))
            logger.debug("nvcc %s found via %s", result.path, result.found_via)
            return result
    raise _not_found(ctx, per_step, considered)


def _not_found(
    ctx: SearchContext,
    per_step: Iterable[tuple[SearchStep, list[Candidate]]],
    considered: list[Candidate],
) -> NvccNotFoundError:
    lines = []
    for step, seen in per_step:
        if not seen:
            lines.append(f"  - {step.name}: {step.if_empty(ctx)}")
        for cand in seen:
            lines.append(f"  - {cand.found_via}: {cand.path} ({cand.note})")
    cu12 = any(c.found_via == "pip-wheel:nvidia-cuda-nvcc-cu12" for c in considered)
    hint = _CU12_HINT if cu12 else _INSTALL_HINT
    # The first line is what a user of pip's CUDA 12 stack reads first: say it there.
    first = "nvcc was not found (pip's CUDA 12 wheels carry none)" if cu12 else "nvcc was not found"
    return NvccNotFoundError(
        first + ". Searched, in order:\n" + "\n".join(lines) + "\n" + hint,
        candidates=tuple(considered),
        cuda12_wheels_only=cu12,
    )


# --------------------------------------------------------- nvcc vs JAX's CUDA plugin


def installed_jax_cuda_plugins() -> dict[str, tuple[str, int]]:
    """{distribution: (version, CUDA major)} of the JAX CUDA plugins installed."""
    import importlib.metadata  # lazy: costs ~30 ms and is needed only here

    found = {}
    for dist, major in JAX_PLUGINS:
        try:
            found[dist] = (importlib.metadata.version(dist), major)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def check_jax_plugin_match(nvcc: NvccInfo) -> str | None:
    """Warn (and return the text) when nvcc's CUDA major differs from JAX's plugin."""
    plugins = installed_jax_cuda_plugins()
    if not plugins:
        return None
    majors = {major for _, major in plugins.values()}
    nv_major = nvcc.version[0]
    if nv_major in majors:
        return None
    dist, (plugin_version, plugin_major) = max(plugins.items(), key=lambda kv: kv[1][1])
    message = (
        f"nvcc {nvcc.path} is CUDA {nvcc.version_string} (found via {nvcc.found_via}) but "
        f"JAX runs on CUDA {plugin_major} ({dist} {plugin_version}). "
        f"A module built by nvcc {nv_major} links the CUDA {nv_major} runtime statically "
        f"and needs an NVIDIA driver >= {MIN_DRIVER.get(nv_major, 'of that release')}"
    )
    if nv_major > plugin_major:
        message += (
            f", newer than JAX's CUDA {plugin_major} stack needs "
            f"(>= {MIN_DRIVER.get(plugin_major, '?')}): on an older driver the module "
            "fails to load."
        )
    else:
        message += ", and the process ends up with two CUDA runtimes."
    message += (
        f" Fix: use a CUDA {plugin_major} nvcc (set {config.NVCC.name}), or install the "
        f'JAX build that matches this nvcc (pip install "jax[cuda{nv_major}]").'
    )
    warnings.warn(message, ToolchainWarning, stacklevel=2)
    return message


__all__ = [
    "DEFAULT_ROOTS",
    "JAX_PLUGINS",
    "SEARCH_STEPS",
    "WHEEL_LAYOUTS",
    "Candidate",
    "NvccInfo",
    "SearchContext",
    "SearchStep",
    "ToolchainWarning",
    "WheelLayout",
    "check_jax_plugin_match",
    "clear_version_cache",
    "find_nvcc",
    "installed_jax_cuda_plugins",
    "nvcc_identity",
    "nvcc_version",
    "parse_nvcc_version",
    "site_package_dirs",
]
