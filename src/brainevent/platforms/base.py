"""``Platform``: what the shared stages ask of a platform object, and the defaults every
platform shares. A cache hit imports this module, a build steps.py as well."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ..platform_table import BUILD_PLATFORMS
from ..toolchain.host import find_host_compiler, host_key_inputs

if TYPE_CHECKING:
    from ..build.step import BuildStep
    from ..load_options import LoadOptions, SourceUnit
    from ..vocabulary import BindingTarget
    from .steps import GeneratedSources

# (index, unit) -> the unit's compile command (no output) and the directories its compiler writes to.
UnitCommand = Callable[[int, "SourceUnit"], tuple[tuple[str, ...], tuple[str, ...]]]


class Platform:
    """One kind of artifact: its compilers, flags and link, and how JAX runs it. A subclass
    names its row of the platform table (platform_table.py); ``__init_subclass__`` reads the rest."""

    name: ClassVar[str]  # the artifact's kind: manifests and CompiledModule.platform carry it
    jax_platform: ClassVar[str]  # the platform name given to jax.ffi.register_ffi_target
    spellings: ClassVar[tuple[str, ...]]  # what register_ffi_target(platform=) accepts for it
    binding_defines: ClassVar[tuple[str, ...]]  # the decoder's macros (the binding's tag is `name`)
    # Directories under the build directory that compile steps leave behind, removed before publishing.
    scratch_dirs: ClassVar[tuple[str, ...]] = ()
    # XLA may capture its calls into CUDA graphs, which replay kernels without the handler:
    # a reloaded module then needs fresh executables.
    graph_capture: ClassVar[bool]
    nvcc_link: ClassVar[bool] = False  # nvcc drives the link: OpenMP and library flags spelled for it
    # The FFI handlers are a unit of their own, compiled by the host compiler beside the kernel
    # units, instead of ending each one: nvcc's front ends and host pass then never parse them.
    binding_apart: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        row = BUILD_PLATFORMS[cls.name]
        cls.jax_platform, cls.spellings = row.ffi_platform, row.ffi_spellings
        cls.binding_defines, cls.graph_capture = row.binding_defines, row.graph_capture

    def key_inputs(self, options: LoadOptions) -> dict[str, Any]:
        """Everything that keys a build, the toolchain's identity included; ToolchainError when
        the toolchain is missing (then only an ahead-of-time build can load)."""
        return host_key_inputs()

    def portable_inputs(self, options: LoadOptions) -> dict[str, Any]:
        """What keys a build apart from the toolchain's identity (found by ahead-of-time aliases)."""
        return {}

    def can_register(self) -> str | None:
        """None if this process's JAX can run the artifact, else why not."""
        return None

    def preprocess_command(
        self, options: LoadOptions, unit: SourceUnit, source: str, output: str
    ) -> list[str]:
        """The unit's compile command with -E instead of -c (see build/ninja.py, preprocess)."""
        command, _ = self._unit_commands(options, 1)(0, unit)
        return [*command, "-E", source, "-o", output]

    def compile_steps(self, options: LoadOptions, sources: GeneratedSources) -> list[BuildStep]:
        """Compile each kernel unit (and the decoder when it is not at hand yet), then link the
        library with the decoder; a single unit with the decoder at hand is one compiler call
        (``sources.one_call``). A compile step's depfile lists what its compiler read."""
        from ..build.step import BuildStep
        from .languages import openmp_flags
        from .steps import host_glue_step, library_link_flags, unit_step

        units = sources.kernel_units
        commands = self._unit_commands(options, len(units))
        linker, own_flags = self._link_parts(options)
        link_flags = (*own_flags, *openmp_flags(options, nvcc=self.nvcc_link))
        ldflags = (*library_link_flags(options, nvcc=self.nvcc_link), *options.extra_ldflags)
        if sources.one_call:  # a single unit is never C: entry points need C++
            return [unit_step(sources, 0, *commands(0, units[0][1]), (link_flags, ldflags))]
        steps = [unit_step(sources, i, *commands(i, unit)) for i, (_, unit) in enumerate(units)]
        if sources.binding is not None:
            cxx = find_host_compiler().command
            steps.append(host_glue_step(cxx, sources.binding, "binding.o", "FFI handlers"))
        if sources.decoder_source is not None:
            steps.append(self.decoder_step(sources))
        objects = (*(step.output for step in steps if step.output != sources.decoder), sources.decoder)
        link = (*linker, *link_flags, "-o", sources.library, *objects, *ldflags)
        steps.append(BuildStep(sources.library, objects, link, f"link {sources.library}"))
        return steps

    def _unit_commands(self, options: LoadOptions, units: int) -> UnitCommand:
        raise NotImplementedError

    def _link_parts(self, options: LoadOptions) -> tuple[Sequence[str], Sequence[str]]:
        """The linker and the link's own flags (``-shared``...)."""
        raise NotImplementedError

    def covered_dirs(self) -> list[str]:
        """Header directories whose contents the toolchain's identity already covers."""
        from .steps import toolchain_header_dirs

        return toolchain_header_dirs()

    def decoder_step(self, sources: GeneratedSources) -> BuildStep:
        """The shared decoder, by the host compiler on every platform (it needs no CUDA header);
        it must depend only on what :func:`~.steps.decoder_salt` keys."""
        from .steps import host_glue_step

        assert sources.decoder_source is not None
        what = "FFI decoder (built once per toolchain)"
        return host_glue_step(find_host_compiler().command, sources.decoder_source, sources.decoder, what)

    @property
    def binding_target(self) -> BindingTarget:
        """What the binding generator is told about this platform."""
        from ..vocabulary import BindingTarget  # build-only: a cache hit never reads the vocabulary

        return BindingTarget(self.name, self.binding_defines)

    @staticmethod
    def unregistered_help() -> tuple[str, str]:
        """(what the artifact is built for, in words; how to make it callable) for the error a
        call to a built-but-unregistered module raises."""
        return "this platform", "Load it again where it can be registered."

    @staticmethod
    def check_inputs(target: str, arrays: Sequence[Any]) -> None:
        """Raise a KernelCallError for inputs a call cannot use (e.g. on the wrong device)."""
        return None

    @staticmethod
    def describe_artifact(library: str, inputs: dict[str, Any]) -> list[tuple[str, str]]:
        """Extra (label, value) lines `brainevent cache info` shows for an entry."""
        return []
