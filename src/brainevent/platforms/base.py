"""What a platform is to the shared stages, and the host-compiler pieces every platform uses.

A platform turns generated translation units into compile and link steps, says which of
its inputs key a build, and whether this process can run what it builds. The stages never
name a platform or a compiler: they hold a ``Platform`` (the protocol in protocol.py) and ask it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ..headers import INCLUDE_DIR
from ..toolchain import find_host_compiler, xla_include_dir
from ..toolchain.host import find_host_c_compiler, system_include_dirs
from ..toolchain.xla import c_api_digest
from ..vocabulary import BindingTarget

if TYPE_CHECKING:
    from ..build.step import BuildStep
    from ..stages.request import LoadOptions, SourceUnit
    from .protocol import Platform


class GeneratedSources:
    """What the plan stage wrote for a platform to compile (paths relative to the build directory).

    Each kernel unit carries its entry points' trampolines and FFI handlers. The call-frame
    decoder is shared by every module of a toolchain (stages/decoder.py): it is either
    already in the build directory as ``decoder`` (fetched from the cache), or ``decoder_source``
    names its translation unit, to compile into ``decoder`` in this build. A plain class: a
    cache hit imports this module (the platform keys the build), and creating a NamedTuple
    costs more at import.
    """

    __slots__ = ("decoder", "decoder_source", "kernel_units", "library")

    def __init__(
        self,
        kernel_units: tuple[tuple[str, SourceUnit], ...],
        decoder: str,
        decoder_source: str | None,
        library: str,
    ) -> None:
        self.kernel_units = kernel_units  # (generated unit, the user's unit it wraps)
        self.decoder = decoder  # the decoder object every link takes
        self.decoder_source = decoder_source  # None: `decoder` is in place already
        self.library = library  # the file the link writes

    @property
    def one_call(self) -> bool:
        """One source file and the decoder at hand: compile and link in one compiler call."""
        return len(self.kernel_units) == 1 and self.decoder_source is None


class PlatformBase:
    """Defaults and the binding description the platforms share."""

    binding_tag: ClassVar[str]  # the binding's name for the platform (vocabulary.PLATFORM_ENUM)
    binding_defines: ClassVar[tuple[str, ...]] = ()  # macros the decoder unit is compiled with
    scratch_dirs: ClassVar[tuple[str, ...]] = ()

    def decoder_step(self, sources: GeneratedSources) -> BuildStep:
        """The host compiler compiles the decoder for every platform (it needs no CUDA header)."""
        assert sources.decoder_source is not None
        return host_decoder_step(find_host_compiler().command, sources.decoder_source, sources.decoder)

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


DECODER_OPT = "-O2"


def host_decoder_step(cxx: Sequence[str], source: str, output: str) -> BuildStep:
    """The decoder unit, compiled by the host compiler against XLA's C API header."""
    from ..build.step import BuildStep  # build-only: a cache hit never imports it
    from .languages import HOST_CXX_FLAGS

    return BuildStep(
        output=output,
        inputs=(source,),
        command=(*cxx, *HOST_CXX_FLAGS, DECODER_OPT, *binding_include_flags(), "-c", source, "-o", output),
        description="FFI decoder (built once per toolchain)",
    )


def binding_include_flags() -> tuple[str, ...]:
    """Our headers and XLA's C API header (-isystem: its warnings are not the user's)."""
    return ("-I", str(INCLUDE_DIR), "-isystem", str(xla_include_dir()))


def decoder_salt(platform: Platform) -> dict[str, Any]:
    """What a decoder object depends on beyond its command and source: the host compiler,
    XLA's C API and our headers (the object cache keys it with these)."""
    from .._version import BINDING_SCHEMA, __version__
    from ..stages.key import package_headers_digest

    return {
        **host_key_inputs(),
        "package": __version__,
        "binding_schema": BINDING_SCHEMA,
        "package_headers": package_headers_digest(),
        "platform": platform.name,
    }


def depfile_flags(obj: str) -> tuple[str, ...]:
    """The compiler lists every file its preprocessor opened: the cache records them."""
    return ("-MD", "-MF", f"{obj}.d")


def unit_step(obj: str, path: str, unit: SourceUnit, command: Sequence[str], **extra: Any) -> BuildStep:
    """Compile one kernel unit with ``command`` (everything but the output and depfile flags)."""
    from ..build.step import BuildStep

    full = (*command, *depfile_flags(obj), "-c", path, "-o", obj)
    return BuildStep(obj, (path,), full, unit.display_name, depfile=f"{obj}.d", **extra)


def one_call_step(
    sources: GeneratedSources,
    command: Sequence[str],
    link_flags: Sequence[str],
    ldflags: Sequence[str],
    **extra: Any,
) -> BuildStep:
    """Compile the only kernel unit and link it with the decoder, in one compiler call.

    ``command`` is the unit's compile command without ``-c``; ``link_flags`` are the link's own
    (``-shared``); ``ldflags`` the user's, after the inputs, where libraries must come.
    """
    from ..build.step import BuildStep

    (path, unit), library = sources.kernel_units[0], sources.library
    full = (*command, *depfile_flags("k0"), *link_flags, path, sources.decoder, "-o", library, *ldflags)
    return BuildStep(library, (path, sources.decoder), full, unit.display_name, depfile="k0.d", **extra)


def host_key_inputs() -> dict[str, Any]:
    """The host compilers' and XLA's C API's identity: every platform's binding needs them.
    The host C compiler's is keyed with the C++ compiler's: it builds ``.c`` units."""
    cxx, cc = find_host_compiler(), find_host_c_compiler()
    return {
        "cxx": cxx.command,
        "cxx_identity": cxx.identity,
        "cc": list(cc.command),
        "cc_identity": cc.identity,
        "xla_c_api": c_api_digest(),
    }


def toolchain_header_dirs() -> list[str]:
    """Header directories the key already identifies: ours, XLA's and the host compiler's."""
    dirs = [str(INCLUDE_DIR), str(xla_include_dir()), *system_include_dirs(find_host_compiler())]
    return [os.path.realpath(d) for d in dirs]


def user_include_flags(options: LoadOptions, unit: SourceUnit) -> list[str]:
    flags = list(binding_include_flags())  # the appended handlers include XLA's c_api.h
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
