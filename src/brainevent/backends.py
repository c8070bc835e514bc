"""Platform backends: how each kind of module is compiled and linked."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .build.step import BUILD_DIR, BuildStep
from .headers import INCLUDE_DIR
from .pipeline import LoadOptions, SourceUnit
from .toolchain import find_host_compiler, xla_include_dir
from .toolchain.host import system_include_dirs
from .toolchain.xla import c_api_digest

# Flags of ours that every host compile gets. -fvisibility=hidden keeps the
# shared object's dynamic symbol table to the handlers, which speeds up dlopen.
# -ffile-prefix-map keeps the (random) staging directory out of debug info and __FILE__,
# so two clean builds of the same inputs are byte-identical.
HOST_BASE_FLAGS = ("-std=c++17", "-fPIC", "-fvisibility=hidden", f"-ffile-prefix-map={BUILD_DIR}=.")
BINDING_OPT = "-O2"


def binding_step(cxx: Sequence[str], binding: str) -> BuildStep:
    return BuildStep(
        output="binding.o",
        inputs=(binding,),
        command=(
            *cxx,
            *HOST_BASE_FLAGS,
            BINDING_OPT,
            "-I",
            str(INCLUDE_DIR),
            "-isystem",
            str(xla_include_dir()),
            "-c",
            binding,
            "-o",
            "binding.o",
        ),
        description="binding",
    )


def depfile_flags(obj: str) -> tuple[str, ...]:
    """g++ and nvcc list every file the preprocessor opened: the cache records them."""
    return ("-MD", "-MF", f"{obj}.d")


def toolchain_header_dirs() -> list[str]:
    """Header directories the key already identifies: ours, XLA's and the host compiler's."""
    dirs = [str(INCLUDE_DIR), str(xla_include_dir()), *system_include_dirs(find_host_compiler())]
    return [os.path.realpath(d) for d in dirs]


def user_include_flags(options: LoadOptions, unit: SourceUnit) -> list[str]:
    flags = ["-I", str(INCLUDE_DIR)]
    if unit.directory is not None:  # a file's own directory, as if compiled in place
        flags += ["-iquote", str(unit.directory)]
    for path in options.extra_include_paths:
        flags += ["-I", path]
    return flags


_DEBUG_FLAGS = ("-g", "-G", "--device-debug", "-lineinfo", "--generate-line-info", "-Xcompiler=-g")


def strip_flags(options: LoadOptions) -> list[str]:
    """Drop the static symbol table of release builds: a third of a CUDA module's size
    (static cudart), which a load hashes whenever its size or mtime changed. Debug builds keep it."""
    debugging = options.optimization_level == 0 or any(flag in _DEBUG_FLAGS for flag in options.extra_cflags)
    return [] if debugging else ["-Xlinker=--strip-all"]


class CpuBackend:
    platform = "cpu"
    jax_platform = "cpu"

    def portable_inputs(self, options: LoadOptions) -> dict[str, Any]:
        return {}

    def key_inputs(self, options: LoadOptions) -> dict[str, Any]:
        cxx = find_host_compiler()
        return {"cxx": cxx.command, "cxx_identity": cxx.identity, "xla_c_api": c_api_digest()}

    def compile_steps(
        self,
        options: LoadOptions,
        kernel_units: Sequence[tuple[str, SourceUnit]],
        binding: str,
        library: str,
    ) -> list[BuildStep]:
        cxx = find_host_compiler().command
        steps = []
        objects = []
        for i, (path, unit) in enumerate(kernel_units):
            obj = f"k{i}.o"
            objects.append(obj)
            command = (*self._unit_command(options, unit), *depfile_flags(obj), "-c", path, "-o", obj)
            steps.append(
                BuildStep(
                    output=obj,
                    inputs=(path,),
                    command=command,
                    description=unit.display_name,
                    depfile=f"{obj}.d",
                )
            )
        steps.append(binding_step(cxx, binding))
        objects.append("binding.o")
        steps.append(
            BuildStep(
                output=library,
                inputs=tuple(objects),
                command=(*cxx, "-shared", "-o", library, *objects, *options.extra_ldflags),
                description=f"link {library}",
            )
        )
        return steps

    def covered_dirs(self) -> list[str]:
        return toolchain_header_dirs()

    def _unit_command(self, options: LoadOptions, unit: SourceUnit) -> tuple[str, ...]:
        opt = [f"-O{options.optimization_level}"] + (["-ffast-math"] if options.use_fast_math else [])
        return (
            *find_host_compiler().command,
            *HOST_BASE_FLAGS,
            *opt,
            *user_include_flags(options, unit),
            *options.extra_cflags,
        )

    def preprocess_command(
        self, options: LoadOptions, unit: SourceUnit, source: str, output: str
    ) -> list[str]:
        """The unit's compile command with -E: what the compiler sees after macro expansion."""
        return [*self._unit_command(options, unit), "-E", source, "-o", output]

    def can_register(self) -> str | None:
        return None


class CudaBackend:
    """nvcc for ``.cu`` units, the host compiler for ``.cpp`` units and the binding; nvcc links.

    nvcc never sees XLA's headers: the binding is a separate host translation unit.
    """

    platform = "cuda"
    jax_platform = "CUDA"

    def __init__(self, compute_capability: object = None) -> None:
        from .errors import ToolchainError
        from .toolchain.cuda_arch import resolve_archs
        from .toolchain.nvcc import find_nvcc

        # Without nvcc, modules built ahead of time can still be loaded (see key_inputs).
        self.toolchain_error: ToolchainError | None = None
        self._nvcc: Any = None
        try:
            self._nvcc = find_nvcc()
        except ToolchainError as exc:
            self.toolchain_error = exc
        self.archs = resolve_archs(
            compute_capability, nvcc_version=self._nvcc.version if self._nvcc else None
        )
        if self._nvcc is not None:
            _warn_plugin_mismatch_once(self._nvcc)

    @property
    def nvcc(self) -> Any:
        if self._nvcc is None:
            assert self.toolchain_error is not None
            raise self.toolchain_error
        return self._nvcc

    def portable_inputs(self, options: LoadOptions) -> dict[str, Any]:
        """What keys a build apart from the toolchain's identity: the archs."""
        return {"archs": [a.sm for a in self.archs]}

    def key_inputs(self, options: LoadOptions) -> dict[str, Any]:
        from . import config
        from .toolchain.nvcc import nvcc_identity

        cxx = find_host_compiler()
        return {
            "nvcc": nvcc_identity(self.nvcc.path),
            "nvcc_version": list(self.nvcc.version),
            "cxx": cxx.command,
            "cxx_identity": cxx.identity,
            "archs": [a.sm for a in self.archs],
            "allow_unsupported_compiler": config.ALLOW_UNSUPPORTED_COMPILER.get(),
            "xla_c_api": c_api_digest(),
        }

    def _nvcc_flags(self, options: LoadOptions) -> list[str]:
        from .toolchain.cuda_arch import gencode_flags
        from .toolchain.host_compat import check_host_compiler

        cxx = find_host_compiler()
        level = options.optimization_level
        flags = [
            "-std=c++17",
            f"-O{level}",
            f"-Xptxas=-O{level}",
            "-ccbin",
            cxx.path,
            *check_host_compiler(self.nvcc, cxx.path),
            "-Xcompiler=-fPIC",
            "-Xcompiler=-fvisibility=hidden",
            f"-Xcompiler=-ffile-prefix-map={BUILD_DIR}=.",
            *gencode_flags(self.archs),
        ]
        if options.use_fast_math:
            flags.append("--use_fast_math")
        return flags

    def compile_steps(
        self,
        options: LoadOptions,
        kernel_units: Sequence[tuple[str, SourceUnit]],
        binding: str,
        library: str,
    ) -> list[BuildStep]:
        cxx = find_host_compiler().command
        nvcc_flags = self._nvcc_flags(options)
        steps: list[BuildStep] = []
        objects: list[str] = []
        for i, (path, unit) in enumerate(kernel_units):
            obj = f"k{i}.o"
            objects.append(obj)
            # Kept intermediates are named after the unit, unlike nvcc's default temporary
            # files (tmpxft_<pid>_...), whose names end up in the symbol table.
            keep = ("--keep", f"--keep-dir={BUILD_DIR}/nvcc-tmp/k{i}")
            command = (
                self.nvcc.path,
                *nvcc_flags,
                *keep,
                *self._unit_flags(options, unit),
                *depfile_flags(obj),
                "-c",
                path,
                "-o",
                obj,
            )
            steps.append(BuildStep(obj, (path,), command, unit.display_name, depfile=f"{obj}.d"))
        steps.append(binding_step(cxx, binding))
        objects.append("binding.o")
        link = (
            self.nvcc.path,
            "-shared",
            "-nodlink",
            *strip_flags(options),
            "-ccbin",
            find_host_compiler().path,
            "-o",
            library,
            *objects,
            *options.extra_ldflags,
        )
        steps.append(BuildStep(library, tuple(objects), link, f"link {library}"))
        return steps

    def covered_dirs(self) -> list[str]:
        return [*toolchain_header_dirs(), os.path.realpath(self.nvcc.root)]

    def _unit_flags(self, options: LoadOptions, unit: SourceUnit) -> list[str]:
        includes = user_include_flags(options, unit)
        # nvcc has no -iquote; the unit's directory goes on -I. .cpp units go through
        # nvcc as well (it hands them to the host compiler), so extra_cuda_cflags mean
        # the same for every unit and the CUDA headers are on the path.
        includes = [("-I" if f == "-iquote" else f) for f in includes]
        half = []
        if unit.suffix == ".cu":
            from .build.half_types import half_type_flags

            search = [Path(p) for p in options.extra_include_paths]
            half = half_type_flags(unit.text, unit.directory, search, options.extra_cflags)
        return [*includes, *half, *options.extra_cflags]

    def preprocess_command(
        self, options: LoadOptions, unit: SourceUnit, source: str, output: str
    ) -> list[str]:
        """The unit's compile command with -E, as the host compiler sees it: nvcc's -E
        preprocesses for the device (__CUDA_ARCH__ defined); -U after nvcc's own -D undoes that."""
        flags = [*self._nvcc_flags(options), *self._unit_flags(options, unit)]
        return [self.nvcc.path, *flags, "-Xcompiler=-U__CUDA_ARCH__", "-E", source, "-o", output]

    def can_register(self) -> str | None:
        return cuda_runtime_unavailable()


_warned_mismatch: set[str] = set()


def _warn_plugin_mismatch_once(nvcc: Any) -> None:
    """Warn (once per nvcc) when nvcc's CUDA major differs from the installed jax-cudaNN-plugin."""
    if nvcc.path in _warned_mismatch:
        return
    _warned_mismatch.add(nvcc.path)
    from .toolchain.nvcc import check_jax_plugin_match

    check_jax_plugin_match(nvcc)  # emits a ToolchainWarning itself


def cuda_runtime_unavailable() -> str | None:
    """None when this process's JAX can run CUDA targets, else why it cannot."""
    try:
        from jax._src import xla_bridge

        if xla_bridge.backends_are_initialized():
            platforms = {b.platform for b in xla_bridge.backends().values()}
            if "gpu" in platforms or "cuda" in platforms:
                return None
            return f"this JAX has no CUDA backend (platforms: {sorted(platforms)})"
    except (ImportError, AttributeError, RuntimeError):
        pass
    from importlib import metadata

    plugins = [d for d in ("jax-cuda13-plugin", "jax-cuda12-plugin") if _installed(metadata, d)]
    if not plugins:
        return "JAX is installed without CUDA support (no jax-cuda12-plugin or jax-cuda13-plugin)"
    from .toolchain.cuda_driver import probe_devices

    probe = probe_devices()
    if not (probe.available and probe.devices):
        return f"no GPU is available ({probe.reason})"
    return None


def _installed(metadata: Any, dist: str) -> bool:
    try:
        metadata.version(dist)
        return True
    except metadata.PackageNotFoundError:
        return False
