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

This module runs the search and checks the result against JAX's CUDA plugin; the tables
and steps live in :mod:`.nvcc_steps`, what one binary is in :mod:`.nvcc_probe`.
"""

from __future__ import annotations

import functools
import logging
import os
import warnings
from collections.abc import Iterable, Sequence

from .. import config
from ..errors import NvccNotFoundError

# The search is split in three modules; every name stays importable from here.
from .nvcc_probe import (
    Candidate,
    NvccInfo,
    _inspect,
    _Unusable,
    _version_of,
    _wrapper_target,
    nvcc_identity,
    nvcc_version,
    parse_nvcc_version,
)
from .nvcc_steps import (
    DEFAULT_ROOTS,
    SEARCH_STEPS,
    WHEEL_LAYOUTS,
    SearchContext,
    SearchStep,
    WheelLayout,
    ordered_steps,
    site_package_dirs,
)

logger = logging.getLogger(__name__)


class ToolchainWarning(UserWarning):
    """The toolchain works but something about it is likely to bite later."""


# ------------------------------------------------------------------------ the tables

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


# ------------------------------------------------------------------------ the search


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


def clear_version_cache() -> None:
    """Forgets every nvcc version, wrapper target and search result of this process."""
    _version_of.cache_clear()
    _wrapper_target.cache_clear()
    _find_in_context.cache_clear()


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
