"""Platform backends: how each kind of module is compiled and linked."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .build.ninja import BuildStep
from .pipeline import INCLUDE_DIR, LoadOptions, SourceUnit
from .toolchain import find_host_compiler, xla_include_dir
from .toolchain.xla import c_api_digest

# Flags of ours that every host compile gets. -fvisibility=hidden keeps the
# shared object's dynamic symbol table to the handlers, which speeds up dlopen.
HOST_BASE_FLAGS = ("-std=c++17", "-fPIC", "-fvisibility=hidden")
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


def user_include_flags(options: LoadOptions, unit: SourceUnit) -> list[str]:
    flags = ["-I", str(INCLUDE_DIR)]
    if unit.directory is not None:  # a file's own directory, as if compiled in place
        flags += ["-iquote", str(unit.directory)]
    for path in options.extra_include_paths:
        flags += ["-I", path]
    return flags


class CpuBackend:
    platform = "cpu"
    jax_platform = "cpu"

    def key_inputs(self, options: LoadOptions) -> dict[str, Any]:
        cxx = find_host_compiler()
        return {"cxx": cxx.command, "cxx_identity": cxx.identity, "xla_c_api": c_api_digest()}

    def compile_steps(
        self, options: LoadOptions, kernel_units: Sequence[tuple[str, SourceUnit]], binding: str, library: str
    ) -> list[BuildStep]:
        cxx = find_host_compiler().command
        opt = [f"-O{options.optimization_level}"] + (["-ffast-math"] if options.use_fast_math else [])
        steps = []
        objects = []
        for i, (path, unit) in enumerate(kernel_units):
            obj = f"k{i}.o"
            objects.append(obj)
            steps.append(
                BuildStep(
                    output=obj,
                    inputs=(path,),
                    command=(
                        *cxx,
                        *HOST_BASE_FLAGS,
                        *opt,
                        *user_include_flags(options, unit),
                        *options.extra_cflags,
                        "-c",
                        path,
                        "-o",
                        obj,
                    ),
                    description=unit.display_name,
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

    def can_register(self) -> str | None:
        return None
