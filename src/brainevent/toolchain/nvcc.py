"""Find nvcc. NVIDIA's cuda-pathfinder searches the usual places; around it: ``BRAINEVENT_NVCC``,
``PATH`` (wrapper scripts followed to the real toolkit), default roots, the version probe, why each
candidate was rejected, and the match against JAX's CUDA plugin. docs/toolchain.md gives the order."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import shlex
import shutil
import site
import subprocess
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from .. import config
from ..backends import installed_version
from ..environment import shortcut_environment, variable
from ..errors import NvccNotFoundError
from ..fileio import file_identity, file_stamps
from .memo import remembered

logger = logging.getLogger(__name__)

_EXE = "nvcc.exe" if sys.platform == "win32" else "nvcc"
_VERSION_TIMEOUT_S = 30.0
DEFAULT_ROOTS: tuple[str, ...] = ("/usr/local/cuda", "/opt/cuda")
# Installed JAX CUDA plugins and the CUDA major each one runs on.
JAX_PLUGINS: tuple[tuple[str, int], ...] = (("jax-cuda12-plugin", 12), ("jax-cuda13-plugin", 13))
# The oldest Linux driver each CUDA major runs on (NVIDIA's compatibility table).
MIN_DRIVER: dict[int, str] = {12: "525.60.13", 13: "580.65.06"}
# Where NVIDIA's wheels put nvcc, under site-packages. The CUDA 12 wheel's bin/ holds
# ptxas but no nvcc: seeing it explains a failed search.
_WHEEL_BINS = ("nvidia/cu13/bin", "nvidia/cuda_nvcc/bin")
# The variables naming toolkit roots, in cuda-pathfinder's order, and their found_via.
_ENV_ROOTS_VARS = (("conda", "CONDA_PREFIX"), ("env:CUDA_PATH", "CUDA_PATH"), ("env:CUDA_HOME", "CUDA_HOME"))
_CU12_VIA = "pip-wheel:nvidia-cuda-nvcc-cu12"
_CU12_WHY = "CUDA 12 pip wheels ship ptxas but no nvcc"

_INSTALL_HINT = (
    "Install one of: the CUDA 13 pip wheels "
    '(pip install "nvidia-cuda-nvcc>=13" nvidia-cuda-cccl, which match jax[cuda13]); '
    "conda's toolkit (conda install -c conda-forge cuda-nvcc); or a system CUDA toolkit. "
    "Or point BRAINEVENT_NVCC at an nvcc binary."
)
CU12_HINT = (
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


class ToolchainWarning(UserWarning):
    """The toolchain works but something about it is likely to bite later."""


class Candidate(NamedTuple):
    """One place considered: the path, how it was found, and what we made of it."""

    path: str
    found_via: str
    note: str = ""


class NvccInfo(NamedTuple):
    """A usable nvcc."""

    path: str  # the real binary, symlinks and wrapper scripts resolved
    root: str  # the toolkit root (parent of bin/)
    version: tuple[int, int]
    found_via: str
    candidates: tuple[Candidate, ...] = ()

    @property
    def version_string(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"


class _Unusable(Exception):
    """Internal: a candidate was looked at and rejected; the message says why."""


def parse_nvcc_version(text: str) -> tuple[int, int] | None:
    """(major, minor) from ``nvcc --version`` output ("... release 13.0, V13.0.88")."""
    for line in text.splitlines():
        number = line.partition("release ")[2].split(",", 1)[0].strip()
        major, _, minor = number.partition(".")
        if major.isdigit() and minor.isdigit():
            return (int(major), int(minor))
    return None


def _run(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            list(args), capture_output=True, text=True, timeout=_VERSION_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise _Unusable(f"`{' '.join(args)}` did not answer in {_VERSION_TIMEOUT_S:.0f}s") from None
    except OSError as exc:
        raise _Unusable(f"cannot run it: {exc}") from None


def _probe_version(real: str) -> tuple[int, int]:
    proc = _run([real, "--version"])
    version = parse_nvcc_version(proc.stdout)
    if proc.returncode != 0 or version is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise _Unusable(f"`nvcc --version` failed (exit {proc.returncode}): {tail[0]}")
    return version


# Remembered per (real path, size, mtime_ns): a rebuilt or upgraded nvcc is asked again.
def _version_of(real: str) -> tuple[int, int]:
    identity = file_identity(real, missing_ok=False)
    return remembered(
        "nvcc-version", identity, lambda: _probe_version(real), decode=lambda v: (int(v[0]), int(v[1]))
    )


def nvcc_version(path: str | os.PathLike[str]) -> tuple[int, int]:
    """The (major, minor) release of an nvcc binary; runs it once per identity (the toolchain memo)."""
    real = os.path.realpath(path)
    try:
        return _version_of(real)
    except (_Unusable, OSError) as exc:
        raise NvccNotFoundError(f"nvcc at {real} is unusable: {exc}", path=real) from None


def _is_script(path: str) -> bool:
    with contextlib.suppress(OSError), open(path, "rb") as fh:
        return fh.read(2) == b"#!"
    return False


def _real_nvcc(path: str) -> str | None:
    # An absolute path to an nvcc binary (not a script), resolved; else None.
    real = os.path.realpath(path)
    ok = os.path.isabs(path) and os.path.basename(path) == _EXE and os.path.isfile(real)
    return real if ok and not _is_script(real) else None


def _script_commands(script: str) -> list[list[str]]:
    commands = []
    with contextlib.suppress(OSError):
        for line in Path(script).read_text(encoding="utf-8", errors="replace").splitlines()[1:]:
            with contextlib.suppress(ValueError):  # a line shlex cannot split is no command we read
                commands.append(shlex.split(line, comments=True))
    return [words for words in commands if words]


def _probe_wrapper(script: str) -> str:
    # A script whose one command is `exec /usr/local/cuda-13.0/bin/nvcc "$@"` says it all.
    # Else a dry run makes the real nvcc print its own directory (`#$ _HERE_=...`) without
    # compiling; it queries the host compiler (~0.1 s), so it fails without one.
    commands = _script_commands(script)
    exec_only = len(commands) == 1 and len(commands[0]) > 1 and commands[0][0] == "exec"
    if exec_only and (real := _real_nvcc(commands[0][1])):
        return real
    try:
        proc = _run([script, "-dryrun", "-c", "-x", "cu", os.devnull, "-o", os.devnull])
        here = re.findall(r"^#\$ _HERE_=(.*)$", proc.stderr + proc.stdout, re.MULTILINE)
    except _Unusable:
        here = []
    # Else the first absolute path to a real nvcc the script names.
    named = [word for words in commands for word in words]
    for real in map(_real_nvcc, [*(os.path.join(d.strip(), _EXE) for d in here), *named]):
        if real:
            return real
    raise _Unusable("it is a wrapper script, and neither `nvcc -dryrun` nor its text revealed the real nvcc")


def _wrapper_target(script: str) -> str:
    return remembered("nvcc-wrapper", file_identity(script, missing_ok=False), lambda: _probe_wrapper(script))


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
        if _is_script(real):  # e.g. /usr/local/bin/nvcc: find the binary it runs
            real = _wrapper_target(real)
        version = _version_of(real)
    except OSError as exc:  # vanished or unreadable between the checks and the stat
        raise _Unusable(str(exc)) from None
    return NvccInfo(real, str(Path(real).parent.parent), version, candidate.found_via)


class SearchContext(NamedTuple):
    """The inputs of one search, gathered once: the steps stay pure and the result memoizable."""

    explicit: str | None
    env_nvcc: str | None
    site_dirs: tuple[str, ...]
    env_roots: tuple[tuple[str, str], ...]  # (found_via, root) of $CONDA_PREFIX, $CUDA_PATH, $CUDA_HOME
    path_env: str | None
    default_roots: tuple[str, ...]
    prefer: str
    pathfinder: bool
    # pathfinder's lookup depends on the environment (LD_LIBRARY_PATH...) and the loader's cache.
    environment: tuple[tuple[str, str], ...]
    ld_cache_stamp: str


def _nvcc_in(root: str) -> str:
    return os.path.join(root, "bin", _EXE)


def _explicit_to_path(value: str) -> str:
    # Accept an nvcc path, a toolkit root or its bin/, or a bare command name.
    if os.path.isdir(value):
        found = (nvcc for nvcc in (_nvcc_in(value), os.path.join(value, _EXE)) if os.path.isfile(nvcc))
        return next(found, _nvcc_in(value))
    if os.sep not in value and not os.path.exists(value):
        return shutil.which(value) or value
    return value


def _step_explicit(ctx: SearchContext) -> list[Candidate]:
    given = ((ctx.explicit, "argument"), (ctx.env_nvcc, f"env:{config.NVCC.name}"))
    return [Candidate(_explicit_to_path(value), via) for value, via in given if value]


def _found_via(path: str, ctx: SearchContext) -> str:
    """Which of pathfinder's places ``path`` lies in."""
    if Path(path).parent.as_posix().endswith(_WHEEL_BINS):
        return "pip-wheel:nvidia-cuda-nvcc"
    for via, root in ctx.env_roots:
        if Path(path).is_relative_to(os.path.realpath(root)):
            return via
    return "cuda-pathfinder:cudart"  # the toolkit of the CUDA runtime the loader finds


def _step_pathfinder(ctx: SearchContext) -> list[Candidate]:
    found = []
    for sp in ctx.site_dirs:  # pip's CUDA 12 wheel: recorded as rejected, to explain a miss
        bin_dir = os.path.join(sp, "nvidia", "cuda_nvcc", "bin")
        if os.path.exists(os.path.join(bin_dir, "ptxas")) and not os.path.exists(os.path.join(bin_dir, _EXE)):
            found.append(Candidate(os.path.join(bin_dir, _EXE), _CU12_VIA, f"rejected: {_CU12_WHY}"))
    if not ctx.pathfinder:
        return found
    # Its last step asks the loader in a child Python (~0.1-0.5 s): the answer is remembered by
    # the stamps of the places it looks at (an install changes one), asked again once vanished.
    dirs = [*ctx.site_dirs, *(os.path.join(r, "bin") for _, r in ctx.env_roots), "/etc/ld.so.cache"]
    places = f"{file_stamps(dirs)}\0{ctx.environment}"
    try:
        path = remembered("nvcc-pathfinder", places, _ask_pathfinder)
        if not os.path.isfile(path):
            path = _ask_pathfinder()
    except LookupError as exc:
        return [*found, Candidate("-", "cuda-pathfinder", f"rejected: {exc}")] if str(exc) else found
    return [*found, Candidate(path, _found_via(path, ctx))]


def _ask_pathfinder() -> str:
    from cuda import pathfinder

    # Its answers are cached for the process; ours are per environment, so ask afresh.
    pathfinder.find_nvidia_binary_utility.cache_clear()
    pathfinder.get_cuda_path_or_home.cache_clear()
    try:
        with warnings.catch_warnings(action="ignore"):  # CUDA_PATH and CUDA_HOME differ: CUDA_PATH wins
            path = pathfinder.find_nvidia_binary_utility("nvcc")
    except Exception as exc:  # e.g. its loader probe failed: a miss, with the reason kept
        raise LookupError(f"it failed: {exc}") from None
    if not path:
        raise LookupError("")
    return path


# BRAINEVENT_NVCC_PREFER -> the steps in order: (name in an error, step, what to say when
# it proposed nothing). A candidate the first step rejects is an error, never a fall-through.
_Step = tuple[str, Callable[[SearchContext], list[Candidate]], str]
_EXPLICIT = ("the nvcc argument, then BRAINEVENT_NVCC", _step_explicit, "none given, BRAINEVENT_NVCC unset")
_PATHFINDER: _Step = (
    "cuda-pathfinder (NVIDIA pip wheels, $CONDA_PREFIX, $CUDA_PATH, $CUDA_HOME, the CUDA runtime's toolkit)",
    _step_pathfinder,
    "found no nvcc",
)
_PATH: _Step = (
    "PATH",
    lambda ctx: [Candidate(hit, "PATH")] if (hit := shutil.which(_EXE, path=ctx.path_env or "")) else [],
    "no nvcc on PATH",
)
_DEFAULTS: _Step = (
    "default toolkit roots",
    lambda ctx: [Candidate(_nvcc_in(r), f"default:{r}") for r in ctx.default_roots],
    "none configured",
)
_ENV_ROOTS: _Step = (
    "$CONDA_PREFIX, $CUDA_PATH, $CUDA_HOME",
    lambda ctx: [Candidate(_nvcc_in(root), via) for via, root in ctx.env_roots],
    "all unset",
)
SEARCH_STEPS: dict[str, tuple[_Step, ...]] = {
    "pip": (_EXPLICIT, _PATHFINDER, _PATH, _DEFAULTS),
    "system": (_EXPLICIT, _ENV_ROOTS, _PATH, _DEFAULTS, _PATHFINDER),
}


def find_nvcc(
    explicit: str | None = None, *, default_roots: Sequence[str] = DEFAULT_ROOTS, pathfinder: bool = True
) -> NvccInfo:
    """A usable nvcc, else an NvccNotFoundError listing every place searched; remembered per search
    context, a failure never. ``default_roots`` and ``pathfinder=False`` are for tests."""
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    ctx = SearchContext(
        explicit=explicit,
        env_nvcc=config.NVCC.get(),
        site_dirs=(*site.getsitepackages(), *([user_site] if user_site else [])),
        env_roots=tuple((via, value) for via, var in _ENV_ROOTS_VARS if (value := variable(var))),
        path_env=variable("PATH"),
        default_roots=tuple(default_roots),
        prefer=config.NVCC_PREFER.get(),
        pathfinder=pathfinder,
        environment=tuple(shortcut_environment()),
        ld_cache_stamp=file_stamps(["/etc/ld.so.cache"]),
    )
    return _find_in_context(ctx)


@functools.lru_cache(maxsize=16)
def _find_in_context(ctx: SearchContext) -> NvccInfo:
    considered: list[Candidate] = []
    lines: list[str] = []
    for name, step, if_empty in SEARCH_STEPS[ctx.prefer]:
        proposed = step(ctx)
        if all(c.note for c in proposed):  # nothing to try (a CUDA 12 wheel comes rejected)
            skipped = step is _step_pathfinder and not ctx.pathfinder
            lines.append(f"  - {name}: {'skipped' if skipped else if_empty}")
        for cand in proposed:
            if not cand.note:
                try:
                    info = _inspect(cand)
                except _Unusable as exc:
                    cand = cand._replace(note=f"rejected: {exc}")
                    if step is _step_explicit:
                        raise NvccNotFoundError(
                            f"nvcc given via {cand.found_via} ({cand.path}) is not usable: {exc}. "
                            "Name an nvcc binary or a CUDA toolkit root.",
                            path=cand.path,
                            found_via=cand.found_via,
                            candidates=(*considered, cand),
                        ) from None
                else:
                    accepted = cand._replace(note=f"accepted: {info.path} (CUDA {info.version_string})")
                    logger.debug("nvcc %s found via %s", info.path, info.found_via)
                    return info._replace(candidates=(*considered, accepted))
            considered.append(cand)
            lines.append(f"  - {cand.found_via}: {cand.path} ({cand.note})")
    cu12 = any(c.found_via == _CU12_VIA for c in considered)
    # The first line is what a user of pip's CUDA 12 stack reads first: say it there.
    first = "nvcc was not found (pip's CUDA 12 wheels carry none)" if cu12 else "nvcc was not found"
    raise NvccNotFoundError(
        first + ". Searched, in order:\n" + "\n".join(lines) + "\n" + (CU12_HINT if cu12 else _INSTALL_HINT),
        candidates=tuple(considered),
        cuda12_wheels_only=cu12,
    )


def clear_version_cache() -> None:
    """Forgets every nvcc search result of this process (versions and wrappers live in the memo)."""
    _find_in_context.cache_clear()


def installed_jax_cuda_plugins() -> dict[str, tuple[str, int]]:
    """{distribution: (version, CUDA major)} of the JAX CUDA plugins installed."""
    return {dist: (version, major) for dist, major in JAX_PLUGINS if (version := installed_version(dist))}


def check_jax_plugin_match(nvcc: NvccInfo) -> str | None:
    """Warn (and return the text) when nvcc's CUDA major differs from JAX's plugin."""
    plugins = installed_jax_cuda_plugins()
    nv_major = nvcc.version[0]
    if not plugins or nv_major in {major for _, major in plugins.values()}:
        return None
    dist, (plugin_version, plugin_major) = max(plugins.items(), key=lambda kv: kv[1][1])
    message = (
        f"nvcc {nvcc.path} is CUDA {nvcc.version_string} (found via {nvcc.found_via}) but "
        f"JAX runs on CUDA {plugin_major} ({dist} {plugin_version}). "
        f"A module built by nvcc {nv_major} links the CUDA {nv_major} runtime statically "
        f"and needs an NVIDIA driver >= {MIN_DRIVER.get(nv_major, 'of that release')}"
    )
    message += (
        f", newer than JAX's CUDA {plugin_major} stack needs "
        f"(>= {MIN_DRIVER.get(plugin_major, '?')}): on an older driver the module fails to load."
        if nv_major > plugin_major
        else ", and the process ends up with two CUDA runtimes."
    )
    message += (
        f" Fix: use a CUDA {plugin_major} nvcc (set {config.NVCC.name}), or install the "
        f'JAX build that matches this nvcc (pip install "jax[cuda{nv_major}]").'
    )
    warnings.warn(message, ToolchainWarning, stacklevel=2)
    return message
