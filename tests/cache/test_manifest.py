"""The manifest beside each entry: what a load trusts, what it hashes, what it refuses.

A load takes a library whose size and modification time are those recorded at publish
time as is, hashes any other, and accepts it only if the SHA-256 matches (docs/caching.md,
"Damaged entries").
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from brainevent.cache.manifest import MANIFEST_NAME, MANIFEST_SCHEMA, Manifest, sha256_file

LIBRARY = b"\x7fELF pretend shared object " * 64
KEY = "ab" * 32


def _publish(directory: Path) -> Manifest:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "libm.so").write_bytes(LIBRARY)
    manifest = Manifest(
        key=KEY,
        name="m",
        platform="cpu",
        artifact="libm.so",
        artifact_sha256=hashlib.sha256(LIBRARY).hexdigest(),
        functions={"f": {"params": [["arg", "x", None, "BE::Tensor"]], "line": 3}},
        variant={"extra_cflags": ["-DX=1"]},
        inputs={"extra_cflags": ["-DX=1"]},
        created=1.5,
        build_seconds=0.25,
    )
    manifest = manifest.stamped(directory)
    manifest.dump(directory)
    return manifest


def test_sha256_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"abc")
    assert sha256_file(tmp_path / "f") == hashlib.sha256(b"abc").hexdigest()


def test_round_trip_and_record(tmp_path: Path) -> None:
    published = _publish(tmp_path)
    st = (tmp_path / "libm.so").stat()
    assert (published.artifact_size, published.artifact_mtime_ns) == (st.st_size, st.st_mtime_ns)
    loaded = Manifest.load(tmp_path)
    assert loaded == published
    assert loaded.schema == MANIFEST_SCHEMA
    raw = json.loads((tmp_path / MANIFEST_NAME).read_text())
    assert raw == published._asdict()  # the file holds every field, nothing else
    assert loaded.verify(tmp_path, KEY) is None


@pytest.mark.parametrize(
    "damage",
    [
        "missing",
        "truncated",
        "not json",
        "other schema",
        "no schema",
        "unknown field",
        "missing field",
        "a list",
    ],
)
def test_unreadable_manifests_load_as_none(tmp_path: Path, damage: str) -> None:
    _publish(tmp_path)
    path = tmp_path / MANIFEST_NAME
    raw = json.loads(path.read_text())
    if damage == "missing":
        path.unlink()
    elif damage == "truncated":
        path.write_text(path.read_text()[:40])
    elif damage == "not json":
        path.write_text("manifest")
    elif damage == "a list":
        path.write_text("[1, 2]")
    else:
        if damage == "other schema":
            raw["schema"] = MANIFEST_SCHEMA + 1
        elif damage == "no schema":
            del raw["schema"]
        elif damage == "unknown field":
            raw["surprise"] = 1
        else:
            del raw["artifact_sha256"]
        path.write_text(json.dumps(raw))
    assert Manifest.load(tmp_path) is None


def test_key_mismatch_is_reported(tmp_path: Path) -> None:
    manifest = _publish(tmp_path)
    assert manifest.verify(tmp_path, "cd" * 32) == "manifest key abababababab does not match cdcdcdcdcdcd"


def test_missing_library_is_reported(tmp_path: Path) -> None:
    manifest = _publish(tmp_path)
    (tmp_path / "libm.so").unlink()
    reason = manifest.verify(tmp_path, KEY)
    assert reason is not None and reason.startswith("artifact unreadable: ")
    assert "libm.so" in reason


def _set_mtime(path: Path, mtime_ns: int) -> None:
    os.utime(path, ns=(mtime_ns, mtime_ns))


def test_a_rewritten_library_is_hashed_and_refused(tmp_path: Path) -> None:
    manifest = _publish(tmp_path)
    library = tmp_path / "libm.so"
    library.write_bytes(LIBRARY[:-1] + b"!")  # same size, new content, new mtime
    assert manifest.verify(tmp_path, KEY) == "artifact checksum mismatch (truncated or modified)"
    library.write_bytes(LIBRARY[:100])  # truncated, mtime put back
    _set_mtime(library, manifest.artifact_mtime_ns)
    assert manifest.verify(tmp_path, KEY) == "artifact checksum mismatch (truncated or modified)"


def test_a_faithful_copy_with_a_new_mtime_is_accepted(tmp_path: Path) -> None:
    manifest = _publish(tmp_path)
    library = tmp_path / "libm.so"
    _set_mtime(library, manifest.artifact_mtime_ns + 10**9)  # e.g. copied with cp, not cp -p
    assert manifest.verify(tmp_path, KEY) is None


def test_an_unread_library_is_trusted_on_size_and_mtime(tmp_path: Path) -> None:
    # The fast path: same size and mtime as published means no read at all. (So a change
    # that keeps both is not seen; loads refuse files others can write, see test_security.)
    manifest = _publish(tmp_path)
    library = tmp_path / "libm.so"
    library.write_bytes(LIBRARY[:-1] + b"!")
    _set_mtime(library, manifest.artifact_mtime_ns)
    assert manifest.verify(tmp_path, KEY) is None
    library.chmod(0)  # not readable: still no read needed
    try:
        assert manifest.verify(tmp_path, KEY) is None
        _set_mtime(library, manifest.artifact_mtime_ns + 1)
        if os.getuid() != 0:  # root reads anything
            reason = manifest.verify(tmp_path, KEY)
            assert reason is not None and reason.startswith("artifact unreadable: ")
    finally:
        library.chmod(0o644)


def test_a_manifest_without_recorded_stat_always_hashes(tmp_path: Path) -> None:
    manifest = _publish(tmp_path)
    manifest = manifest._replace(artifact_size=-1, artifact_mtime_ns=-1)
    assert manifest.verify(tmp_path, KEY) is None
    manifest = manifest._replace(artifact_sha256="0" * 64)
    assert manifest.verify(tmp_path, KEY) == "artifact checksum mismatch (truncated or modified)"


def test_specs_are_read_back_on_first_access() -> None:
    from brainevent.cache.manifest import spec_to_json
    from brainevent.runtime.module import SpecTable
    from brainevent.spec.model import FunctionSpec, Param, Role

    specs = {
        "add": FunctionSpec("add", (Param(Role.ARG, "x"), Param(Role.RET, "out")), "k.cpp", 3),
        "scale": FunctionSpec(
            "scale",
            (Param(Role.ARG, "x"), Param(Role.ATTR, "alpha", "float32", "float"), Param(Role.RET, "y")),
        ),
    }
    rows = {name: spec_to_json(spec) for name, spec in specs.items()}
    table = SpecTable(rows)
    assert list(table) == ["add", "scale"] and len(table) == 2 and "add" in table and "mul" not in table
    assert table._specs == {}  # names alone decode nothing
    assert table["scale"] == specs["scale"] and table["scale"] is table["scale"]
    assert list(table._specs) == ["scale"]
    assert table == specs and dict(table) == specs  # a Mapping equal to the dict it was written from
    assert repr(table) == repr(specs)
    assert table["add"].tokens() == ["arg", "ret"]
    with pytest.raises(KeyError):
        table["mul"]
