"""The manifest written beside each published artifact and verified on every load."""

# Not `from __future__ import annotations`: a NamedTuple compiles string annotations (docs/architecture.md).
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..fileio import atomic_write, read_blocks, sha256_file, size_and_mtime
from . import MANIFEST_NAME, records

if TYPE_CHECKING:
    from ..spec.model import FunctionSpec, Param

MANIFEST_SCHEMA = 3  # 2: dependencies recorded from the compiler; 3: the variant
MANIFEST_LIMIT = 1 << 26  # a manifest larger than this is damaged, not read


class Manifest(NamedTuple):
    """A cache entry's manifest: ``_asdict()`` gives every field, as the manifest file holds them."""

    key: str
    name: str
    platform: str
    artifact: str  # file name of the shared object, relative to the entry
    artifact_sha256: str
    functions: dict[str, Any]  # function name -> FunctionSpec as spec_to_json writes it
    # What tells this entry's build from the other builds of its name (`cache prune` keeps
    # the newest version of each), chosen by the kind of entry that made it.
    variant: dict[str, Any]
    # The defaults {} are shared by every manifest that records none: nothing writes to them.
    inputs: dict[str, Any] = {}  # noqa: RUF012 - human-readable record of what was keyed
    created: float = 0.0
    build_seconds: float = 0.0
    artifact_size: int = -1  # with artifact_mtime_ns: the file as published
    artifact_mtime_ns: int = -1
    # Every file the compiler read outside the toolchain's own directories, as
    # {path: [size, mtime_ns, sha256]} (see cache/deps.py), and when the build began.
    dependencies: dict[str, list[Any]] = {}  # noqa: RUF012
    dependencies_since_ns: int = 0
    schema: int = MANIFEST_SCHEMA

    def dump(self, directory: Path, *, mode: int = 0o600) -> None:
        atomic_write(
            directory / MANIFEST_NAME, json.dumps(self._asdict(), indent=1, sort_keys=True), mode=mode
        )

    @classmethod
    def load(cls, directory: Path) -> "Manifest | None":
        """The manifest, or None if it is missing, truncated, of another schema or damaged
        (any field of the wrong shape: see records.py); the caller rebuilds."""
        where = str(directory / MANIFEST_NAME)
        try:
            raw = records.parse_json(b"".join(read_blocks(where, limit=MANIFEST_LIMIT)), where)  # ASCII JSON
            return cls(**records.manifest(raw, MANIFEST_SCHEMA, where))
        except (OSError, ValueError):  # RecordError is a ValueError
            return None

    def stamped(self, directory: Path) -> "Manifest":
        """This manifest with the artifact's size and mtime as it lies in ``directory`` now."""
        size, mtime_ns = size_and_mtime(directory / self.artifact)
        return self._replace(artifact_size=size, artifact_mtime_ns=mtime_ns)

    def verify(self, directory: Path, key: str) -> str | None:
        """None when the entry is intact, else why it is not.

        An artifact whose size and modification time are those recorded at publish time
        has not been written since (loads already refuse files others could write); any
        other artifact is checked against its sha256, which also accepts a faithful copy.
        """
        if self.key != key:
            return f"manifest key {self.key[:12]} does not match {key[:12]}"
        artifact = directory / self.artifact
        try:
            stamp = size_and_mtime(artifact)
        except OSError as exc:
            return f"artifact unreadable: {exc}"
        if stamp == (self.artifact_size, self.artifact_mtime_ns):
            return None
        try:
            digest = sha256_file(artifact)
        except OSError as exc:
            return f"artifact unreadable: {exc}"
        if digest != self.artifact_sha256:
            return "artifact checksum mismatch (truncated or modified)"
        return None

    def stale_dependency(self) -> str | None:
        """None when every file the build read is unchanged, else which one changed."""
        if not self.dependencies:  # e.g. inline sources that include only our headers
            return None
        from .deps import first_stale

        return first_stale(self.dependencies, self.dependencies_since_ns)


def spec_to_json(spec: "FunctionSpec") -> dict[str, Any]:
    """A spec as its manifest row: each parameter
    ``[role, name, dtype, cxx_type(, scratch bytes(, result shape))]``."""
    return {
        "params": [_param_to_json(p) for p in spec.params],
        "source_file": spec.source_file,
        "line": spec.line,
        "scope": spec.scope,
        **{k: v for k in ("vmap_method", "num_batch_dims") if (v := getattr(spec, k)) is not None},
    }


def _param_to_json(p: "Param") -> list[Any]:
    row: list[Any] = [p.role.value, p.name, p.dtype, p.cxx_type]
    if p.scratch_bytes is not None or p.shape is not None:  # scratch sizes, declared result shapes
        row.append(p.scratch_bytes)
    if p.shape is not None:
        row.append(p.shape)
    return row
