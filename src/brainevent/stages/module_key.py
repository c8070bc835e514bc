"""Request -> key: what identifies a build, computed from the raw inputs (no C++ is read).

Headers are not in the key: each entry lists the files its compiler read, and a hit
re-checks them (cache/deps.py), whatever flags or macros chose them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._version import BINDING_SCHEMA, __version__
from ..cache.key import CacheKey, KeyBuilder
from ..errors import ToolchainError
from ..headers import package_header_files, package_headers_digest
from ..load_options import key_record
from ..toolchain.memo import remembered_digest

if TYPE_CHECKING:
    from ..load_options import SourceUnit
    from .request import LoadRequest


class ModuleKey:
    """The keys of one request: ``portable`` leaves out the toolchain (it finds an ahead-of-time
    build through an alias file); ``exact`` is None without a toolchain (``toolchain_error``)."""

    __slots__ = ("_portable", "exact", "keyed_without_toolchain", "record", "toolchain_error")

    def __init__(
        self,
        portable: CacheKey | Callable[[], CacheKey],  # or how to compute it, when first asked
        exact: CacheKey | None,
        record: Mapping[str, Any],
        toolchain_error: ToolchainError | None = None,
        keyed_without_toolchain: Mapping[str, Any] | None = None,
    ) -> None:
        self._portable = portable
        self.exact = exact
        self.record = record  # the keyed inputs, as the manifest records them
        self.toolchain_error = toolchain_error
        # The keyed inputs before the toolchain's identity: what a bundled build is checked against.
        self.keyed_without_toolchain: Mapping[str, Any] = keyed_without_toolchain or {}

    @property
    def portable(self) -> CacheKey:
        """Hashed on first use: a hit in a cache with a toolchain at hand never asks for it."""
        if not isinstance(self._portable, CacheKey):
            self._portable = self._portable()
        return self._portable


def derive_key(request: LoadRequest) -> ModuleKey:
    options, platform = request.options, request.platform
    headers = remembered_digest("package-headers", package_header_files(), package_headers_digest)
    record: dict[str, Any] = {
        "package": __version__,
        "binding_schema": BINDING_SCHEMA,
        "package_headers": headers,
        "functions": _functions_key(request.functions),
        **key_record(options),  # the keyed rows of load_options.OPTIONS
    }
    units = _unit_key(request.units)
    portable_inputs = dict(record, **platform.portable_inputs(options))

    def portable() -> CacheKey:
        builder = KeyBuilder(f"{platform.name}-portable").add("record", portable_inputs)
        return builder.add("units", units).finish()

    portable_record = dict(record)
    try:
        record.update(platform.key_inputs(options))
        record.update(_library_inputs(options.extra_libraries))
    except ToolchainError as exc:
        return ModuleKey(portable, None, record, exc, portable_record)
    exact = KeyBuilder(platform.name).add("record", record).add("units", units).finish()
    return ModuleKey(portable, exact, record, None, portable_record)


def _library_inputs(names: Sequence[str]) -> dict[str, Any]:
    """Which copy of each NVIDIA library the build links (where, how found, its file's identity)."""
    if not names:
        return {}
    from ..toolchain.nvidia_libs import key_inputs

    return {"nvidia_libraries": key_inputs(names)}


def _functions_key(functions: Any) -> Any:
    """The raw `functions` argument (or one function's tokens) in a keyable form: it is resolved
    only on a miss, where anything unexpected is refused."""
    if functions is None or isinstance(functions, str):
        return functions
    if isinstance(functions, Mapping):
        return {str(k): _functions_key(v) for k, v in functions.items()}
    if isinstance(functions, (list, tuple)):
        return [str(f) for f in functions]
    return repr(functions)


def _unit_key(units: Sequence[SourceUnit]) -> list[Any]:
    return [[u.display_name, u.suffix, u.text] for u in units]
