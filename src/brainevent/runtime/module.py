"""CompiledModule: what a loader returns, with call sugar over ``jax.ffi.ffi_call`` (attribute
values are converted by attrs.py, on the first call that passes any)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import KernelCallError, KernelNotAvailableError
from ..platforms import HOST_PLATFORM, platform_class

if TYPE_CHECKING:
    from ..spec.model import FunctionSpec
    from .artifact_path import ArtifactPath


class KernelFunction:
    """``mod.<func>(*arrays, outs=None, scratch_bytes=None, **attrs)``: calls the FFI target
    under or outside jit.

    ``outs`` is a ``jax.ShapeDtypeStruct`` (or anything with ``shape`` and ``dtype``)
    or a sequence of them, one per ``ret``; by default each result takes the shape
    and dtype of the first input. ``scratch_bytes`` sizes a ``scratch`` parameter: an int,
    or a callable given the input arrays (their shapes and dtypes) that returns one.
    Hashable by identity, so ``jax.jit(mod.func)`` works.
    (A plain class, as is CompiledModule: a cache hit imports this module, and creating a
    dataclass costs far more.)
    """

    def __init__(
        self,
        target: str,
        spec: FunctionSpec,
        vmap_method: str | None = None,
        platform: str = HOST_PLATFORM,  # a name in brainevent.platforms: it checks the inputs
        # Why the module's targets were not registered in this process (recorded at load
        # time); a call then fails here, naming the reason, instead of in XLA with "No FFI handler".
        unregistered: str | None = None,
        module: str = "",
    ) -> None:
        self.target, self.spec, self.vmap_method = target, spec, vmap_method
        self.platform, self.unregistered, self.module = platform, unregistered, module

    def __repr__(self) -> str:
        return f"KernelFunction(target={self.target!r}, spec={self.spec!r}, platform={self.platform!r})"

    def __call__(self, *arrays: Any, outs: Any = None, scratch_bytes: Any = None, **attrs: Any) -> Any:
        import jax

        if self.unregistered is not None:
            raise self._not_registered_error()
        spec = self.spec
        self.check_arity(len(arrays))
        converted = self.converted_attrs(attrs)
        platform_class(self.platform).check_inputs(self.target, arrays)
        result_specs = self._result_specs(arrays, outs)
        single = len(spec.rets) == 1 and not isinstance(outs, (list, tuple))
        if spec.scratch or scratch_bytes is not None:
            return self._call_with_scratch(arrays, converted, result_specs, single, scratch_bytes)
        call = jax.ffi.ffi_call(
            self.target,
            result_specs[0] if single else result_specs,
            vmap_method=self.vmap_method,
        )
        return call(*arrays, **converted)

    def _call_with_scratch(
        self,
        arrays: Sequence[Any],
        attrs: dict[str, Any],
        results: list[Any],
        single: bool,
        scratch_bytes: Any,
    ) -> Any:
        """The scratch buffer is one more result (uint8, after the ``ret`` ones) that XLA
        allocates per call; it is dropped from what the caller gets back."""
        import jax

        from .scratch import scratch_result

        results = [*results, scratch_result(self.target, self.spec, arrays, scratch_bytes)]
        call = jax.ffi.ffi_call(self.target, results, vmap_method=self.vmap_method)
        out = call(*arrays, **attrs)[: len(self.spec.rets)]
        return out[0] if single else out

    def _not_registered_error(self) -> KernelNotAvailableError:
        kind, fix = platform_class(self.platform).unregistered_help()
        return KernelNotAvailableError(
            f"{self.target}: module {self.module!r} was built for {kind} but not registered with JAX "
            f"in this process, so it cannot be called: {self.unregistered}. {fix}",
            target=self.target,
            module=self.module,
            platform=self.platform,
            reason=self.unregistered,
        )

    def check_arity(self, n_inputs: int, n_outputs: int | None = None) -> None:
        """KernelCallError unless the call passes as many inputs (and outputs) as the spec."""
        spec = self.spec
        if n_inputs != len(spec.args):
            raise KernelCallError(
                f"{self.target}: expected {len(spec.args)} input array(s) ({' '.join(spec.tokens())}), "
                f"got {n_inputs}",
                target=self.target,
            )
        if n_outputs is not None and n_outputs != len(spec.rets):
            raise KernelCallError(
                f"{self.target}: expected {len(spec.rets)} result spec(s) (one per 'ret'), got {n_outputs}",
                target=self.target,
            )

    def converted_attrs(self, attrs: Mapping[str, Any]) -> dict[str, Any]:
        """The attributes as NumPy scalars of their declared types; KernelCallError naming
        any unknown, missing or out-of-range one."""
        declared = {p.name: p.dtype for p in self.spec.attrs}
        unknown = sorted(set(attrs) - set(declared))
        if unknown:
            raise KernelCallError(
                f"{self.target}: unexpected attribute(s) {unknown}; it takes "
                f"{sorted(declared) or 'no attributes'}",
                target=self.target,
            )
        missing = sorted(set(declared) - set(attrs))
        if missing:
            raise KernelCallError(
                f"{self.target}: missing attribute(s) {missing}; pass them as keywords",
                target=self.target,
            )
        if not declared:
            return {}
        from .attrs import convert_attr  # imported by the first call that passes attributes

        return {
            name: convert_attr(self.target, name, dtype or "float64", attrs[name])
            for name, dtype in declared.items()
        }

    def _result_specs(self, arrays: Sequence[Any], outs: Any) -> list[Any]:
        import jax

        n = len(self.spec.rets)
        if outs is None:
            if not arrays:
                raise KernelCallError(
                    f"{self.target}: has no inputs to take result shapes from; "
                    "pass outs=jax.ShapeDtypeStruct(...)",
                    target=self.target,
                )
            first = arrays[0]
            return [jax.ShapeDtypeStruct(np.shape(first), first.dtype) for _ in range(n)]
        items = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        if len(items) != n:
            raise KernelCallError(
                f"{self.target}: expected {n} result spec(s) in outs= (one per 'ret'), got {len(items)}",
                target=self.target,
            )
        specs = []
        for item in items:
            if not (hasattr(item, "shape") and hasattr(item, "dtype")):
                raise KernelCallError(
                    f"{self.target}: outs= entries need .shape and .dtype (use jax.ShapeDtypeStruct), "
                    f"got {item!r}",
                    target=self.target,
                )
            specs.append(jax.ShapeDtypeStruct(item.shape, item.dtype))
        return specs


class CompiledModule:
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

    def _fields(self) -> tuple[Any, ...]:
        return (
            self.name,
            self.platform,
            self.functions,
            self.targets,
            self.registered,
            self.built_now,
            self.cache_dir,
            self.path,
            self.unregistered_reason,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CompiledModule) and self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __repr__(self) -> str:
        return (
            f"CompiledModule(name={self.name!r}, platform={self.platform!r}, functions={self.functions!r}, "
            f"targets={self.targets!r}, registered={self.registered!r}, built_now={self.built_now!r}, "
            f"cache_dir={self.cache_dir!r}, path={self.path!r}, "
            f"unregistered_reason={self.unregistered_reason!r})"
        )

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

        from ..vocabulary import handler_symbol

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
                calls[item] = KernelFunction(
                    self.targets[item],
                    functions[item],
                    platform=self.__dict__["platform"],
                    unregistered=self.__dict__.get("unregistered_reason"),
                    module=self.__dict__.get("name", ""),
                )
            return calls[item]
        raise AttributeError(
            f"module {self.__dict__.get('name')!r} has no function {item!r}; it has {sorted(functions)}"
        )

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self.functions))
