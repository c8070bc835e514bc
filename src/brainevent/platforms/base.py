"""The defaults every platform shares; the interface the stages program against is the
``Platform`` protocol (protocol.py), which documents each method. A cache hit imports this
module, a build steps.py as well."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import ToolchainError
from ..toolchain.host import find_host_c_compiler, find_host_compiler
from .devices import BUILD_PLATFORMS

if TYPE_CHECKING:
    from ..build.step import BuildStep
    from ..load_options import LoadOptions, SourceUnit
    from ..vocabulary import BindingTarget
    from .sources import GeneratedSources

# (index, unit) -> the unit's compile command, or the directories its compiler writes to.
UnitCommand = Callable[[int, "SourceUnit"], tuple[str, ...]]


class PlatformBase:
    """Defaults and the binding description the platforms share."""

    name: ClassVar[str]  # a build platform of the platform table (devices.py): the rest is read there
    jax_platform: ClassVar[str]
    spellings: ClassVar[tuple[str, ...]]
    binding_tag: ClassVar[str]  # the binding's name for the platform (vocabulary.PLATFORM_ENUM)
    binding_defines: ClassVar[tuple[str, ...]]
    scratch_dirs: ClassVar[tuple[str, ...]] = ()
    graph_capture: ClassVar[bool]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        row = BUILD_PLATFORMS[cls.name]
        cls.jax_platform, cls.spellings = row.ffi_platform, row.ffi_spellings
        cls.binding_tag, cls.binding_defines = cls.name, row.binding_defines
        cls.graph_capture = row.graph_capture

    def compile_steps(self, options: LoadOptions, sources: GeneratedSources) -> list[BuildStep]:
        from ..build.step import BuildStep
        from .steps import one_call_step, unit_step

        command, workdirs = self._unit_commands(options, len(sources.kernel_units))
        linker, link_flags, ldflags = self._link_parts(options)
        if sources.one_call:  # a single unit is never C: entry points need C++
            unit = sources.kernel_units[0][1]
            return [one_call_step(sources, command(0, unit), link_flags, ldflags, workdirs=workdirs(0, unit))]
        steps = [
            unit_step(f"k{i}.o", path, unit, command(i, unit), workdirs=workdirs(i, unit))
            for i, (path, unit) in enumerate(sources.kernel_units)
        ]
        if sources.decoder_source is not None:
            steps.append(self.decoder_step(sources))
        objects = (*(step.output for step in steps if step.output != sources.decoder), sources.decoder)
        link = (*linker, *link_flags, "-o", sources.library, *objects, *ldflags)
        steps.append(BuildStep(sources.library, objects, link, f"link {sources.library}"))
        return steps

    def _unit_commands(self, options: LoadOptions, units: int) -> tuple[UnitCommand, UnitCommand]:
        raise NotImplementedError

    def _link_parts(self, options: LoadOptions) -> tuple[Sequence[str], Sequence[str], Sequence[str]]:
        """The linker, the link's own flags (``-shared``...) and the user's, after the inputs."""
        raise NotImplementedError

    def covered_dirs(self) -> list[str]:
        from .steps import toolchain_header_dirs

        return toolchain_header_dirs()

    def decoder_step(self, sources: GeneratedSources) -> BuildStep:
        """The host compiler compiles the decoder for every platform (it needs no CUDA header)."""
        from .steps import host_decoder_step

        assert sources.decoder_source is not None
        return host_decoder_step(find_host_compiler().command, sources.decoder_source, sources.decoder)

    def recall_files(self) -> list[str] | None:
        try:
            return [find_host_compiler().path, find_host_c_compiler().path]
        except ToolchainError:
            return None

    @property
    def binding_target(self) -> BindingTarget:
        from ..vocabulary import BindingTarget  # build-only: a cache hit never reads the vocabulary

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
