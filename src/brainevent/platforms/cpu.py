"""The CPU platform: the host C++ compiler compiles every unit and links the module."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..toolchain.host import find_host_compiler
from .base import Platform, UnitCommand

if TYPE_CHECKING:
    from ..load_options import LoadOptions


class CpuPlatform(Platform):
    name = "cpu"  # its row of the platform table (platform_table.py) says the rest

    def _unit_commands(self, options: LoadOptions, units: int) -> UnitCommand:
        from .steps import host_unit_command  # build-only, as languages.py below

        return lambda i, unit: (host_unit_command(options, unit, options.extra_cflags), ())

    def _link_parts(self, options: LoadOptions) -> tuple[Sequence[str], Sequence[str]]:
        from .languages import HOST_LINK_CHECKS

        return find_host_compiler().command, ("-shared", *HOST_LINK_CHECKS)

    @staticmethod
    def check_inputs(target: str, arrays: Sequence[Any]) -> None:
        """A C++ module runs on the CPU: say so instead of XLA's "no handler on CUDA"."""
        from ..errors import KernelCallError

        for i, array in enumerate(arrays):
            devices = getattr(array, "devices", None)
            if not callable(devices):
                continue
            try:
                platforms = {d.platform for d in devices()}
            except Exception:  # tracers and other array-likes have no concrete placement
                continue
            if platforms - {"cpu"}:
                raise KernelCallError(
                    f"{target} is a C++ (CPU) kernel but input {i} lives on {sorted(platforms)}. Put the "
                    "inputs on the CPU (jax.device_put(x, jax.devices('cpu')[0])) or run under "
                    "`with jax.default_device(jax.devices('cpu')[0]):`.",
                    target=target,
                )
