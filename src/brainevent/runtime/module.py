"""CompiledModule: what a loader returns, and ``SpecTable``, its functions read back from the
rows a manifest holds (cache/manifest.py writes them). Its functions' call sugar (``mod.<func>``, a
:class:`~.kernel_function.KernelFunction`) loads on first use: a load never needs it."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import KernelCallError
from ..records import Record

if TYPE_CHECKING:
    from ..spec.model import FunctionSpec
    from .artifact_path import ArtifactPath
    from .kernel_function import KernelFunction


class CompiledModule(Record):
    """A compiled and (usually) registered module.

    ``path`` is the shared object (a ``str`` that also has ``Path``'s methods, see
    :class:`ArtifactPath`); ``functions`` maps each entry point to its
    :class:`FunctionSpec`; ``targets`` maps it to its FFI target name.
    """

    def __init__(
        self,
        name: str,
        platform: str,  # the platform it was built for (a name in brainevent.platforms)
        functions: Mapping[str, FunctionSpec],
        targets: Mapping[str, str],
        registered: bool,
        built_now: bool,
        cache_dir: Path,
        path: str | os.PathLike[str],
        # Why registration was refused at load time (no GPU, JAX without CUDA), else None.
        unregistered_reason: str | None = None,
    ) -> None:
        self.name, self.platform, self.functions, self.targets = name, platform, functions, targets
        self.registered, self.built_now, self.cache_dir = registered, built_now, cache_dir
        self._path: str = os.fspath(path)  # an ArtifactPath once `path` has been read
        self.unregistered_reason = unregistered_reason
        self._calls: dict[str, KernelFunction] = {}

    # Compared and shown (Record), in the constructor's order.
    _fields: ClassVar[tuple[str, ...]] = ("name", "platform", "functions", "targets", "registered")
    _fields += ("built_now", "cache_dir", "path", "unregistered_reason")
    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    @property
    def path(self) -> ArtifactPath:
        from .artifact_path import ArtifactPath  # on first use: a load itself never reads the path

        if not isinstance(self._path, ArtifactPath):
            self._path = ArtifactPath(self._path)
        return self._path

    @path.setter
    def path(self, value: str | os.PathLike[str]) -> None:
        self._path = os.fspath(value)

    @property
    def function_names(self) -> list[str]:
        """The module's function names (the keys of ``functions``), as 0.2.1 listed them."""
        return list(self.functions)

    def get_handler(self, name: str) -> Any:
        """The XLA FFI handler of function ``name`` as a ctypes function pointer (0.2.1's API):
        ``jax.ffi.pycapsule(mod.get_handler("f"))`` registers it by hand."""
        import ctypes

        from ..headers import handler_symbol

        if name not in self.functions:
            raise KernelCallError(
                f"module {self.name!r} has no function {name!r}; it has {sorted(self.functions)}",
                function=name,
            )
        library = ctypes.CDLL(str(self.path), mode=ctypes.RTLD_LOCAL)  # the handle already open
        handler = getattr(library, handler_symbol(name, command_buffer=False))
        handler.restype = ctypes.c_void_p
        handler.argtypes = [ctypes.c_void_p]
        return handler

    @property
    def content_hash(self) -> str:
        """``"sha256:"`` and the first 16 hex digits of the library's SHA-256 (0.2.1's identity
        of a build)."""
        from ..fileio import sha256_file

        return "sha256:" + sha256_file(self.path)[:16]

    @property
    def specs(self) -> dict[str, list[str]]:
        return {name: spec.tokens() for name, spec in self.functions.items()}

    @property
    def target_names(self) -> list[str]:
        return list(self.targets.values())

    def __getattr__(self, item: str) -> KernelFunction:
        functions = self.__dict__.get("functions", {})
        if item in functions:
            calls = self.__dict__["_calls"]
            if item not in calls:
                from .kernel_function import KernelFunction

                calls[item] = KernelFunction(
                    self.targets[item],
                    functions[item],
                    platform=self.__dict__["platform"],
                    unregistered=self.__dict__.get("unregistered_reason"),
                    module=self.__dict__.get("name", ""),
                )
            return calls[item]
        from ..spec.names import did_you_mean

        raise AttributeError(
            f"module {self.__dict__.get('name')!r} has no function {item!r}; it has {sorted(functions)}."
            + did_you_mean(item, functions)
        )

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self.functions))


if TYPE_CHECKING:
    _SpecMapping = Mapping[str, FunctionSpec]
else:
    _SpecMapping = Mapping  # unsubscripted: creating the class costs half as much


class SpecTable(_SpecMapping):
    """``{function: FunctionSpec}`` over a manifest's rows, each spec made on first access.

    A load registers the functions by name alone; their specs (and the spec model and
    vocabulary modules behind them) are first needed when a function is called.
    """

    __slots__ = ("_rows", "_specs")

    def __init__(self, rows: Mapping[str, Mapping[str, Any]]) -> None:
        self._rows = rows
        self._specs: dict[str, FunctionSpec] = {}

    def __getitem__(self, name: str) -> FunctionSpec:
        spec = self._specs.get(name)
        if spec is None:
            spec = self._specs[name] = spec_from_json(name, self._rows[name])
        return spec

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, name: object) -> bool:
        return name in self._rows

    def __repr__(self) -> str:
        return repr(dict(self))


def spec_from_json(name: str, data: Mapping[str, Any]) -> FunctionSpec:
    from ..spec.model import FunctionSpec, Param, Role

    params = tuple(Param(Role(row[0]), *row[1:]) for row in data["params"])
    return FunctionSpec(
        name, params, data.get("source_file", ""), int(data.get("line", 0)), data.get("scope", "")
    )
