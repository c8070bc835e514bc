"""The pieces every platform builds its compile and link steps from (generated sources, unit and
glue steps, include and library flags, the decoder's salt). Only a build imports this module."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ..headers import INCLUDE_DIR, xla_include_dir
from ..toolchain.host import find_host_c_compiler, find_host_compiler, host_key_inputs
from ..toolchain.host_compat import system_include_dirs

if TYPE_CHECKING:
    from ..build.step import BuildStep
    from ..load_options import LoadOptions, SourceUnit


class GeneratedSources(NamedTuple):
    """What the plan stage wrote for a platform to compile (paths relative to the build directory).
    Each kernel unit carries its entry points' trampolines, and their FFI handlers unless the
    platform compiles those apart (``binding``). The decoder, shared by a toolchain's modules
    (stages/decoder.py), is in place as ``decoder`` or compiled from ``decoder_source``."""

    kernel_units: tuple[tuple[str, SourceUnit], ...]  # (generated unit, the user's unit it wraps)
    decoder: str  # the decoder object every link takes
    decoder_source: str | None  # None: `decoder` is in place already
    library: str  # the file the link writes
    binding: str | None = None  # the handlers' own unit; None: they end each kernel unit

    @property
    def one_call(self) -> bool:
        """One source file and nothing else to compile: compile and link in one compiler call."""
        return len(self.kernel_units) == 1 and self.decoder_source is None and self.binding is None


def host_glue_step(cxx: Sequence[str], source: str, output: str, description: str) -> BuildStep:
    """A unit of our own generated code (the decoder, a binding kept apart), compiled by the
    host compiler against XLA's C API header; it reads only headers the key covers."""
    from ..build.step import BuildStep  # build-only: a cache hit never imports it
    from .languages import HOST_CXX_FLAGS

    command = (*cxx, *HOST_CXX_FLAGS, "-O2", *binding_include_flags(), "-c", source, "-o", output)
    return BuildStep(output, (source,), command, description)


def binding_include_flags() -> tuple[str, ...]:
    """Our headers and XLA's C API header (-isystem: its warnings are not the user's)."""
    return ("-I", str(INCLUDE_DIR), "-isystem", str(xla_include_dir()))


def decoder_salt(platform: str) -> dict[str, Any]:
    """What a decoder object of ``platform`` depends on beyond its command and source (the object
    cache keys it with these)."""
    from .._version import BINDING_SCHEMA, __version__
    from ..headers import package_headers_digest

    return {
        **host_key_inputs(),
        "package": __version__,
        "binding_schema": BINDING_SCHEMA,
        "package_headers": package_headers_digest(),
        "platform": platform,
    }


def unit_step(
    sources: GeneratedSources,
    i: int,
    command: Sequence[str],
    workdirs: tuple[str, ...],
    link: tuple[Sequence[str], Sequence[str]] | None = None,
) -> BuildStep:
    """Compile kernel unit ``i`` (``command``: all but the output and depfile flags) to ``k<i>.o``;
    with ``link`` (the link's own flags, and the user's, which follow the inputs) compile the only
    unit and link it with the decoder in one call. The depfile lists what the compiler read."""
    from ..build.step import BuildStep

    path, unit = sources.kernel_units[i]
    inputs: tuple[str, ...] = (path,)
    tail: tuple[str, ...] = ("-c", path, "-o", f"k{i}.o")
    output = stem = f"k{i}.o"
    if link is not None:
        inputs, output, stem = (path, sources.decoder), sources.library, f"k{i}"
        tail = (*link[0], path, sources.decoder, "-o", output, *link[1])
    full = (*command, "-MD", "-MF", f"{stem}.d", *tail)
    return BuildStep(output, inputs, full, unit.display_name, depfile=f"{stem}.d", workdirs=workdirs)


def toolchain_header_dirs() -> list[str]:
    """Header directories the key already identifies: ours, XLA's and the host compiler's."""
    dirs = [str(INCLUDE_DIR), str(xla_include_dir()), *system_include_dirs(find_host_compiler())]
    return [os.path.realpath(d) for d in dirs]


def unit_include_flags(options: LoadOptions, unit: SourceUnit) -> list[str]:
    flags = list(binding_include_flags())  # the appended handlers include XLA's c_api.h
    if unit.directory is not None:  # a file's own directory, as if compiled in place
        flags += ["-iquote", str(unit.directory)]
    for path in options.extra_include_paths:
        flags += ["-I", path]
    if options.extra_libraries:  # -isystem for the headers of the NVIDIA libraries named
        from ..toolchain.nvidia_libs import include_flags

        flags += include_flags(options.extra_libraries)
    return flags


def host_unit_command(options: LoadOptions, unit: SourceUnit, cflags: Sequence[str]) -> tuple[str, ...]:
    """A unit the host compilers build (C++ of a CPU module, C on every platform), without the
    output: ``cflags`` are the user's, those fit for the unit's language kept."""
    from . import languages

    compiler: Sequence[str]
    ours: Sequence[str]
    if languages.is_c_unit(unit):
        compiler, ours = find_host_c_compiler().command, languages.HOST_COMMON_FLAGS
        user = languages.c_flags(cflags)
    else:
        compiler = find_host_compiler().command
        ours = (*languages.HOST_CXX_FLAGS, *languages.optional_header_flags(options, unit, cuda=False))
        user = languages.cxx_flags(cflags)
    return (
        *compiler,
        *ours,
        f"-O{options.optimization_level}",
        *(["-ffast-math"] if options.use_fast_math else []),
        *languages.openmp_flags(options),
        *unit_include_flags(options, unit),
        *user,
    )


def library_link_flags(options: LoadOptions, *, nvcc: bool = False) -> list[str]:
    """The NVIDIA libraries in ``extra_libraries``, by full path, with their runtime paths."""
    if not options.extra_libraries:
        return []
    from ..toolchain.nvidia_libs import link_flags

    return link_flags(options.extra_libraries, nvcc=nvcc)
