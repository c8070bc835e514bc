"""Artifact: a built module as the cache holds it (library, manifest, specs), not yet loaded."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..spec.model import FunctionSpec, Param, Role

if TYPE_CHECKING:
    from ..cache.manifest import Manifest
    from ..cache.store import CacheEntry


class Artifact:
    """A plain class, as the other records of the cache-hit path (docs/architecture.md)."""

    __slots__ = ("built_now", "directory", "manifest")

    def __init__(self, directory: Path, manifest: Manifest, built_now: bool) -> None:
        self.directory = directory  # the published cache entry
        self.manifest = manifest
        self.built_now = built_now  # False when it came from the cache

    @classmethod
    def from_entry(cls, entry: CacheEntry) -> Artifact:
        return cls(entry.directory, entry.manifest, entry.built_now)

    @property
    def library(self) -> Path:
        return self.directory / self.manifest.artifact

    def functions(self) -> dict[str, FunctionSpec]:
        """The specs, read back from the manifest (a hit parses no C++)."""
        return {name: spec_from_json(name, data) for name, data in self.manifest.functions.items()}


def spec_to_json(spec: FunctionSpec) -> dict[str, Any]:
    return {
        "params": [_param_to_json(p) for p in spec.params],
        "source_file": spec.source_file,
        "line": spec.line,
        "scope": spec.scope,
    }


def _param_to_json(p: Param) -> list[Any]:
    row: list[Any] = [p.role.value, p.name, p.dtype, p.cxx_type]
    if p.scratch_bytes is not None:  # only scratch parameters carry a fifth field
        row.append(p.scratch_bytes)
    return row


def spec_from_json(name: str, data: Mapping[str, Any]) -> FunctionSpec:
    params = tuple(Param(Role(row[0]), *row[1:]) for row in data["params"])
    return FunctionSpec(
        name, params, data.get("source_file", ""), int(data.get("line", 0)), data.get("scope", "")
    )
