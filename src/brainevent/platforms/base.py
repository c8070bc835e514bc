"""What a platform is to the shared stages, and the host-compiler pieces every platform uses.

A platform turns generated translation units into compile and link steps, says which of
its inputs key a build, and whether this process can run what it builds. The stages never
name a platform or a compiler: they hold a :class:`Platform` and ask it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol

from ..build.step import BuildStep
from ..headers import INCLUDE_DIR
from ..toolchain import find_host_compiler, xla_include_dir
from ..toolchain.host import system_include_dirs
from ..toolchain.xla import c_api_digest
from ..vocabulary import BindingTarget
from .languages import HOST_COMMON_FLAGS, c_compiler_key

if TYPE_CHECKING:
    from ..stages.request import LoadOptions, SourceUnit


class GeneratedSources(NamedTuple):
    """What the plan stage wrote for a platform to compile (paths relative to the build directory)."""

    kernel_units: tuple[tuple[str, SourceUnit], ...]  # (generated unit, the user's unit it wraps)
    binding: str  # the binding unit
    library: str  # the file the link writes


class Platform(Protocol):
    """One kind of artifact: its compilers, flags and link, and how JAX runs it."""

    name: ClassVar[str]  # the artifact's kind: manifests and CompiledModule.platform carry it
    jax_platform: ClassVar[str]  # the platform name given to jax.ffi.register_ffi_target
    spellings: ClassVar[tuple[str, ...]]  # what register_ffi_target(platform=) accepts for it
    # Directories under the build directory that compile steps leave behind: removed before
    # the entry is published.
    scratch_dirs: ClassVar[tuple[str, ...]]

    @property
    def binding_target(self) -> BindingTarget:
        """What the binding generator is told about this platform."""
        ...

    @staticmethod
    def unregistered_help() -> tuple[str, str]:
        """(what the artifact is built for, in words; how to make it callable) for the error a
        call to a built-but-unregistered module raises."""
        ...

    def key_inputs(self, options: LoadOptions) -> dict[str, Any]:
        """Everything that keys a build, the toolchain's identity included; ToolchainError
        when the toolchain is missing (then only an ahead-of-time build can load)."""
        ...

    def portable_inputs(self, options: LoadOptions) -> dict[str, Any]:
        """What keys a build apart from the toolchain's identity (found by ahead-of-time aliases)."""
        ...

    def compile_steps(self, options: LoadOptions, sources: GeneratedSources) -> list[BuildStep]:
        """Compile each kernel unit and the binding, then link the library."""
        ...

    def covered_dirs(self) -> list[str]:
        """Header directories whose contents the toolchain's identity already covers."""
        ...

    def can_register(self) -> str | None:
        """None if this process's JAX can run the artifact, else why not."""
        ...

    def preprocess_command(
        self, options: LoadOptions, unit: SourceUnit, source: str, output: str
    ) -> list[str]:
        """The unit's compile command with -E instead of -c (see build/preprocess.py)."""
        ...

    @staticmethod
    def check_inputs(target: str, arrays: Sequence[Any]) -> None:
        """Raise a KernelCallError for inputs a call cannot use (e.g. on the wrong device)."""
        ...

    @staticmethod
    def describe_artifact(library: str, inputs: dict[str, Any]) -> list[tuple[str, str]]:
        """Extra (label, value) lines `brainevent cache info` shows for an entry."""
        ...


class PlatformBase:
    """Defaults and the binding description the platforms share."""

    binding_tag: ClassVar[str]  # the binding's name for the platform (vocabulary.PLATFORM_ENUM)
    binding_defines: ClassVar[tuple[str, ...]] = ()  # macros the binding unit is compiled with
    scratch_dirs: ClassVar[tuple[str, ...]] = ()

    @property
    def binding_target(self) -> BindingTarget:
        return BindingTarget(self.binding_tag, self.binding_defines)

    @staticmethod
    def unregistered_help() -> tuple[str, str]:
        return "this platform", "Load it again where it can be registered."

    @staticmethod
    def check_inputs(target: str, arrays: Sequence[Any]) -> None:
        return None

    @staticmethod
    def describe_artifact(library: str, inputs: dict[str, Any]) -> list[tuple[str, str]]:
        return []


# Flags of ours that every host C++ compile gets (languages.py says why).
HOST_BASE_FLAGS = ("-std=c++17", *HOST_COMMON_FLAGS)
BINDING_OPT = "-O2"


def binding_step(cxx: Sequence[str], binding: str) -> BuildStep:
    """The binding unit, compiled by the host compiler against XLA's C API header."""
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
    """The compiler lists every file its preprocessor opened: the cache records them."""
    return ("-MD", "-MF", f"{obj}.d")


def unit_step(obj: str, path: str, unit: SourceUnit, command: Sequence[str], **extra: Any) -> BuildStep:
    """Compile one kernel unit with ``command`` (everything but the output and depfile flags)."""
    full = (*command, *depfile_flags(obj), "-c", path, "-o", obj)
    return BuildStep(obj, (path,), full, unit.display_name, depfile=f"{obj}.d", **extra)


def host_key_inputs() -> dict[str, Any]:
    """The host compilers' and XLA's C API's identity: every platform's binding needs them."""
    cxx = find_host_compiler()
    return {"cxx": cxx.command, "cxx_identity": cxx.identity, **c_compiler_key(), "xla_c_api": c_api_digest()}


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


def library_include_flags(options: LoadOptions) -> list[str]:
    """``-isystem`` for the headers of the NVIDIA libraries in ``extra_libraries``."""
    if not options.extra_libraries:
        return []
    from ..toolchain.nvidia_libs import include_flags

    return include_flags(options.extra_libraries)


def library_link_flags(options: LoadOptions, *, nvcc: bool = False) -> list[str]:
    """The NVIDIA libraries in ``extra_libraries``, by full path, with their runtime paths."""
    if not options.extra_libraries:
        return []
    from ..toolchain.nvidia_libs import link_flags

    return link_flags(options.extra_libraries, nvcc=nvcc)
