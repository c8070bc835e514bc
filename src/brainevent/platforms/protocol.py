"""The ``Platform`` protocol: what the shared stages ask of a platform object.

Only type checkers import this module (every import of it is under ``if TYPE_CHECKING:``):
a cache hit never creates the class, since creating a Protocol costs more than a plain
class. The platforms themselves subclass ``base.PlatformBase`` for the shared defaults.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from ..build.step import BuildStep
    from ..load_options import LoadOptions, SourceUnit
    from ..vocabulary import BindingTarget
    from .sources import GeneratedSources


class Platform(Protocol):
    """One kind of artifact: its compilers, flags and link, and how JAX runs it."""

    name: ClassVar[str]  # the artifact's kind: manifests and CompiledModule.platform carry it
    jax_platform: ClassVar[str]  # the platform name given to jax.ffi.register_ffi_target
    spellings: ClassVar[tuple[str, ...]]  # what register_ffi_target(platform=) accepts for it
    # Directories under the build directory that compile steps leave behind: removed before
    # the entry is published.
    scratch_dirs: ClassVar[tuple[str, ...]]
    # Whether XLA may capture custom calls into graphs that replay kernels without calling
    # the handler again (CUDA graphs): a reloaded module then needs fresh executables.
    graph_capture: ClassVar[bool]

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
        """Compile each kernel unit (and the decoder when it is not at hand yet), then link the
        library with the decoder; a single unit with the decoder at hand is one compiler call
        (``sources.one_call``). A compile step's depfile lists what its compiler read."""
        ...

    def decoder_step(self, sources: GeneratedSources) -> BuildStep:
        """Compile the shared decoder: it must depend only on what :func:`decoder_salt` keys."""
        ...

    def covered_dirs(self) -> list[str]:
        """Header directories whose contents the toolchain's identity already covers."""
        ...

    def can_register(self) -> str | None:
        """None if this process's JAX can run the artifact, else why not."""
        ...

    def recall_files(self) -> list[str] | None:
        """The toolchain files a recalled load's stamps cover; None: never recall (stages/recall.py)."""
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
