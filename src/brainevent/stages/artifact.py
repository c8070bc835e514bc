"""Artifact: a built module as the cache holds it (library, manifest, specs), not yet loaded."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ..cache.manifest import Manifest
from ..cache.store import CacheEntry
from ..spec.model import FunctionSpec, Param, Role


class Artifact(NamedTuple):
    directory: Path  # the published cache entry
    manifest: Manifest
    built_now: bool  # False when it came from the cache

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
        "params": [[p.role.value, p.name, p.dtype, p.cxx_type] for p in spec.params],
        "source_file": spec.source_file,
        "line": spec.line,
        "scope": spec.scope,
    }


def spec_from_json(name: str, data: Mapping[str, Any]) -> FunctionSpec:
    params = tuple(Param(Role(r), n, d, c) for r, n, d, c in data["params"])
    return FunctionSpec(
        name, params, data.get("source_file", ""), int(data.get("line", 0)), data.get("scope", "")
    )
