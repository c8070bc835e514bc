"""The CPU platform: the host C++ compiler compiles every unit and links the module."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..toolchain import find_host_compiler
from ..toolchain.host import host_key_inputs
from .base import PlatformBase, UnitCommand

if TYPE_CHECKING:
    from ..load_options import LoadOptions, SourceUnit


class CpuPlatform(PlatformBase):
    name = "cpu"  # its row of the platform table (devices.py) says the rest

    def portable_inputs(self, options: LoadOptions) -> dict[str, Any]:
        return {}

    def key_inputs(self, options: LoadOptions) -> dict[str, Any]:
        return host_key_inputs()

    def _unit_commands(self, options: LoadOptions, units: int) -> tuple[UnitCommand, UnitCommand]:
        return (lambda i, unit: self._unit_command(options, unit)), (lambda i, unit: ())

    def _link_parts(self, options: LoadOptions) -> tuple[Sequence[str], Sequence[str], Sequence[str]]:
        from .steps import library_link_flags  # build-only, as languages.py below

        ldflags = (*library_link_flags(options), *options.extra_ldflags)
        return find_host_compiler().command, ("-shared", *self._link_flags(options)), ldflags

    def covered_dirs(self) -> list[str]:
        from .steps import toolchain_header_dirs

        return toolchain_header_dirs()

    @staticmethod
    def _link_flags(options: LoadOptions) -> list[str]:
        from . import languages

        return [*languages.HOST_LINK_CHECKS, *languages.openmp_host_flags(options)]

    def _unit_command(self, options: LoadOptions, unit: SourceUnit) -> tuple[str, ...]:
        from . import languages, steps

        opt = [f"-O{options.optimization_level}"] + (["-ffast-math"] if options.use_fast_math else [])
        opt += languages.openmp_host_flags(options)
        if languages.is_c_unit(unit):
            from ..toolchain.host import find_host_c_compiler

            compiler, flags = [*find_host_c_compiler().command], list(languages.HOST_COMMON_FLAGS)
            user = languages.c_flags(options.extra_cflags)
        else:
            compiler, flags = find_host_compiler().command, list(languages.HOST_CXX_FLAGS)
            flags += languages.optional_header_flags(options, unit, cuda=False)
            user = languages.cxx_flags(options.extra_cflags)
        return (
            *compiler,
            *flags,
            *opt,
            *steps.user_include_flags(options, unit),
            *steps.library_include_flags(options),
            *user,
        )

    def preprocess_command(
        self, options: LoadOptions, unit: SourceUnit, source: str, output: str
    ) -> list[str]:
        """The unit's compile command with -E: what the compiler sees after macro expansion."""
        return [*self._unit_command(options, unit), "-E", source, "-o", output]

    def can_register(self) -> str | None:
        return None

    @staticmethod
    def check_inputs(target: str, arrays: Sequence[Any]) -> None:
        """A C++ module runs on the CPU: say so instead of XLA's "no handler on CUDA"."""
        from ..errors import KernelCallError

        for i, array in enumerate(arrays):
            devices = getattr(array, "devices", None)
            if devices is None or not callable(devices):
                continue
            try:
                platforms = {d.platform for d in devices()}
            except Exception:  # tracers and other array-likes have no concrete placement
                continue
            if platforms - {"cpu"}:
                raise KernelCallError(
                    f"{target} is a C++ (CPU) kernel but input {i} lives on {sorted(platforms)}. "
                    "Put the "
                    "inputs on the CPU (jax.device_put(x, jax.devices('cpu')[0])) or run under "
                    "`with jax.default_device(jax.devices('cpu')[0]):`.",
                    target=target,
                )
