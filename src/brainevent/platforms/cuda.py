"""The CUDA platform: nvcc for the kernel units and the link, the host compiler for the FFI
handlers (``binding_apart``: compiled while nvcc compiles the kernels) and the shared decoder.
Everything that knows about nvcc (flags, kept intermediates, archs, JAX's CUDA plugins) is here."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import config
from ..environment import shortcut_environment
from ..errors import ToolchainError
from ..fileio import file_identity, file_stamps
from ..toolchain.host import find_host_compiler, host_key_inputs
from ..toolchain.memo import remembered
from . import running_platforms
from .base import Platform, UnitCommand

# The build steps, nvcc's search and the arch tables are imported where a build needs them.
if TYPE_CHECKING:
    from ..load_options import LoadOptions, SourceUnit
    from ..toolchain.cuda_arch import CudaArch
    from ..toolchain.nvcc import NvccInfo

# nvcc keeps each unit's intermediates here (removed before an entry is published).
_KEEP_ROOT = "nvcc-tmp"
_warned_mismatch: set[str] = set()  # the nvcc paths checked against JAX's CUDA plugin
_DEBUG_FLAGS = ("-g", "-G", "--device-debug", "-lineinfo", "--generate-line-info", "-Xcompiler=-g")


class CudaPlatform(Platform):
    """``compute_capability`` picks the target archs (None: those of the GPUs). What keys a build
    (nvcc's identity and version, the archs) is remembered per search context (toolchain/memo.py),
    checked by one ``stat`` of nvcc: a cache hit neither searches for nor runs nvcc. Archs given,
    pinned or read from JAX's GPUs name the context; archs from the driver (JAX's backends not up
    yet) are never remembered: a GPU may change."""

    name = "cuda"  # its row of the platform table (platform_table.py) says the rest
    scratch_dirs = (_KEEP_ROOT,)
    nvcc_link = True
    binding_apart = True  # nvcc's passes over the handlers cost more than a g++ unit beside the kernels

    def __init__(self, compute_capability: object = None) -> None:
        # Without nvcc, modules built ahead of time can still be loaded (see key_inputs).
        self.toolchain_error: ToolchainError | None = None
        self._requested = compute_capability if compute_capability is not None else _jax_archs()
        self._nvcc: NvccInfo | None = None
        self._archs: tuple[CudaArch, ...] | None = None
        self._context = _search_context(self._requested)
        if self._context is None:  # archs from the GPUs
            self._known = self._search()
        else:
            # A remembered search holds while its nvcc is the same file (one stat).
            self._known = remembered(
                "cuda-toolchain",
                self._context,
                self._search,
                fresh=lambda known: known is not None and file_identity(known["nvcc"]) == known["identity"],
            )

    def _search(self) -> dict[str, Any] | None:
        from ..toolchain.nvcc import check_jax_plugin_match, find_nvcc

        try:
            self._nvcc = find_nvcc()
        except ToolchainError as exc:
            self.toolchain_error = exc
        archs = [a.sm for a in self.archs]
        if self._nvcc is None:
            return None
        # Warns once per nvcc whose CUDA major differs from JAX's plugin's (there is none without one).
        if self._nvcc.path not in _warned_mismatch and _jax_cuda_plugin_found():
            _warned_mismatch.add(self._nvcc.path)
            check_jax_plugin_match(self._nvcc)
        nvcc, identity = self._nvcc, file_identity(self._nvcc.path, missing_ok=False)
        return {"nvcc": nvcc.path, "identity": identity, "version": list(nvcc.version), "archs": archs}

    @property
    def archs(self) -> tuple[CudaArch, ...]:
        if self._archs is None:
            from ..toolchain.cuda_arch import resolve_archs

            version = self._nvcc.version if self._nvcc else None
            self._archs = resolve_archs(self._requested, pinned=config.CUDA_ARCH.get(), nvcc_version=version)
        return self._archs

    @property
    def nvcc(self) -> NvccInfo:
        if self._nvcc is None and self.toolchain_error is None:  # the key came from the memo
            found = self._search()
            if found is not None and self._known is not None and found["nvcc"] != self._known["nvcc"]:
                # The search now finds another nvcc than the one keyed: remember it and refuse
                # to build under the other's key.
                remembered("cuda-toolchain", str(self._context), lambda: found, fresh=found.__eq__)
                raise ToolchainError(
                    f"nvcc changed during this load: the cache key names {self._known['nvcc']} but "
                    f"a search now finds {found['nvcc']}. Load the module again.",
                    value=found["nvcc"],
                )
        if self._nvcc is None:
            assert self.toolchain_error is not None
            raise self.toolchain_error
        return self._nvcc

    def portable_inputs(self, options: LoadOptions) -> dict[str, Any]:
        return {"archs": self._known["archs"] if self._known else [a.sm for a in self.archs]}

    def key_inputs(self, options: LoadOptions) -> dict[str, Any]:
        if self._known is None:  # no nvcc: the load looks for an ahead-of-time build
            assert self.toolchain_error is not None
            raise self.toolchain_error
        return {
            "nvcc": self._known["identity"],
            "nvcc_version": self._known["version"],
            **host_key_inputs(),
            "archs": self._known["archs"],
            "allow_unsupported_compiler": config.ALLOW_UNSUPPORTED_COMPILER.get(),
        }

    def _nvcc_flags(self, options: LoadOptions) -> list[str]:
        from ..toolchain.cuda_arch import gencode_flags
        from ..toolchain.host_compat import check_host_compiler
        from .languages import HOST_COMMON_FLAGS

        cxx, level = find_host_compiler(), options.optimization_level
        return [
            "-std=c++17",
            f"-O{level}",
            f"-Xptxas=-O{level}",
            "-ccbin",
            cxx.path,
            *check_host_compiler(self.nvcc, cxx.path),
            *(f"-Xcompiler={flag}" for flag in HOST_COMMON_FLAGS),
            *gencode_flags(self.archs),
            *(["--use_fast_math"] if options.use_fast_math else []),
        ]

    def _unit_commands(self, options: LoadOptions, units: int) -> UnitCommand:
        from ..build import BUILD_DIR
        from . import languages
        from .steps import host_unit_command

        nvcc_flags = self._nvcc_flags(options)
        threads = arch_thread_flags(len(self.archs), units)
        c_flags = languages.host_flags_from_nvcc(options.extra_cflags)  # the host share of the nvcc flags

        def command(i: int, unit: SourceUnit) -> tuple[tuple[str, ...], tuple[str, ...]]:
            if languages.is_c_unit(unit):  # C goes to the host C compiler, not through nvcc
                return host_unit_command(options, unit, c_flags), ()
            # Kept intermediates are named after the unit, unlike nvcc's default temporary
            # files (tmpxft_<pid>_...), whose names end up in the symbol table.
            keep = f"--keep-dir={BUILD_DIR}/{_KEEP_ROOT}/k{i}"
            flags = (*nvcc_flags, "--keep", keep, *threads, *self._unit_flags(options, unit))
            return (self.nvcc.path, *flags), (f"{_KEEP_ROOT}/k{i}",)

        return command

    def _link_parts(self, options: LoadOptions) -> tuple[Sequence[str], Sequence[str]]:
        from .languages import NVCC_LINK_CHECKS

        linker = (self.nvcc.path, "-ccbin", find_host_compiler().path)
        return linker, ("-shared", "-nodlink", *_strip_flags(options), *NVCC_LINK_CHECKS)

    def covered_dirs(self) -> list[str]:
        return [*super().covered_dirs(), os.path.realpath(self.nvcc.root)]

    def _unit_flags(self, options: LoadOptions, unit: SourceUnit) -> list[str]:
        from . import languages
        from .steps import unit_include_flags

        # nvcc has no -iquote; the unit's directory goes on -I. .cpp units go through
        # nvcc as well (it hands them to the host compiler), so extra_cuda_cflags mean
        # the same for every unit and the CUDA headers are on the path.
        includes = [("-I" if f == "-iquote" else f) for f in unit_include_flags(options, unit)]
        return [
            *includes,
            *languages.optional_header_flags(options, unit, cuda=unit.suffix == ".cu"),
            *languages.openmp_flags(options, nvcc=True),
            *languages.cxx_flags(options.extra_cflags),
        ]

    def preprocess_command(
        self, options: LoadOptions, unit: SourceUnit, source: str, output: str
    ) -> list[str]:
        """The unit's compile command with -E, as the host compiler sees it: nvcc's -E
        preprocesses for the device (__CUDA_ARCH__ defined); -U after nvcc's own -D undoes that."""
        from . import languages

        if languages.is_c_unit(unit):
            return super().preprocess_command(options, unit, source, output)
        flags = [*self._nvcc_flags(options), *self._unit_flags(options, unit)]
        return [self.nvcc.path, *flags, "-Xcompiler=-U__CUDA_ARCH__", "-E", source, "-o", output]

    def can_register(self) -> str | None:
        platforms = running_platforms()
        if platforms is not None:
            if platforms & set(self.spellings):
                return None
            return f"this JAX has no CUDA backend (platforms: {sorted(platforms)})"
        if not _jax_cuda_plugin_found():
            return "JAX is installed without CUDA support (no jax-cuda12-plugin or jax-cuda13-plugin)"
        from ..toolchain.cuda_driver import probe_devices

        probe = probe_devices()
        return None if probe.available else f"no GPU is available ({probe.reason})"

    @staticmethod
    def unregistered_help() -> tuple[str, str]:
        return "CUDA", (
            "Run it where JAX sees an NVIDIA GPU (a jax-cuda12-plugin or jax-cuda13-plugin matching "
            "nvcc's CUDA major, e.g. pip install 'jax[cuda13]'; check nvidia-smi and "
            "CUDA_VISIBLE_DEVICES), or call a CPU build of the kernel (load_cpp_inline) here."
        )

    @staticmethod
    def describe_artifact(library: str, inputs: dict[str, Any]) -> list[tuple[str, str]]:
        from ..toolchain.fatbin import fatbin_entries

        code = sorted({f"{e.kind} {e.arch}" for e in fatbin_entries(Path(library))})
        return [("gpu code", ", ".join(code)), ("archs", ", ".join(inputs.get("archs", [])))]


def arch_thread_flags(archs: int, units: int) -> list[str]:
    """``--threads`` for a unit's archs when cores are spare (ninja runs one unit per core)."""
    spare = (os.cpu_count() or 1) // max(units, 1)
    threads = min(archs, spare)
    return [f"--threads={threads}"] if threads > 1 else []


def _strip_flags(options: LoadOptions) -> list[str]:
    """Strip release builds: the static symbol table is a third of a module a load may hash."""
    debugging = options.optimization_level == 0 or any(flag in _DEBUG_FLAGS for flag in options.extra_cflags)
    return [] if debugging else ["-Xlinker=--strip-all"]


def _jax_archs() -> list[str] | None:
    """The compute capabilities ("9.0") of JAX's GPUs once its backends are up and
    BRAINEVENT_CUDA_ARCH pins none, else None (then the driver is asked)."""
    if config.CUDA_ARCH.get() is not None or not (running_platforms() or set()) & set(CudaPlatform.spellings):
        return None
    import jax

    try:
        devices = jax.devices("gpu")
    except RuntimeError:
        return None
    found = sorted({d.compute_capability for d in devices if getattr(d, "compute_capability", None)})
    return found or None


def _search_context(compute_capability: object) -> str | None:
    """The memo key of nvcc's search (None: archs from the GPUs); a pip install changes its
    site-packages directories' stamps, so it searches again."""
    arch = config.CUDA_ARCH.get() if compute_capability is None else compute_capability
    if arch is None:
        return None
    parts = (
        repr(arch),
        config.NVCC.get(),
        config.NVCC_PREFER.get(),
        repr(shortcut_environment()),
        sys.prefix,
        *sys.path,
        file_stamps([entry for entry in sys.path if entry.endswith(("site-packages", "dist-packages"))]),
    )
    return "\0".join(str(part) for part in parts)


def _jax_cuda_plugin_found() -> bool:
    """A path lookup: reading distribution metadata would cost tens of milliseconds."""
    import importlib.util

    return any(importlib.util.find_spec(f"jax_cuda{major}_plugin") for major in (12, 13))
