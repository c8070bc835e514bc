"""Property test: any mutation of any record brainevent reads back gives a miss (rebuild,
measure again, compile locally) or a typed BrainEventError; never another exception type.

The records start from real ones: a module built by g++ (its manifest, its objects' and
the shared decoder's dependency records), a bundle written by ``build --into``, a remembered
benchmark entry and a distributed status and archive as the writers make them. Hypothesis then
replaces any subtree by any JSON value, deletes keys, or damages the bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent import BrainEventError
from brainevent.cache.key import CacheKey
from brainevent.cache.manifest import Manifest
from brainevent.cache.objects import ObjectCache
from brainevent.cache.store import EntryStore
from brainevent.custom_kernel import remembered
from brainevent.distributed import exchange
from brainevent.runtime.module import SpecTable
from tests.support.properties import HealthCheck, given, settings, st

SRC = str(Path(__file__).resolve().parents[2] / "src")

A = r"""
#include "brainevent/common.h"
#include "val.h"
// @BE f arg ret
void f(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i] + VAL;
}
"""
B = "int helper_b() { return 2; }\n"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


def _paths(value: Any, here: tuple = ()) -> list[tuple]:
    found = [here]
    if isinstance(value, dict):
        for k, v in value.items():
            found += _paths(v, (*here, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _paths(v, (*here, i))
    return found


def mutate(data: st.DataObject, original: Any) -> bytes:
    """A damaged copy of ``original``, as the bytes of a file."""
    value = json.loads(json.dumps(original))
    kind = data.draw(st.sampled_from(["replace", "delete", "truncate", "flip", "deep"]))
    text = json.dumps(value).encode()
    if kind == "truncate":
        return text[: data.draw(st.integers(0, max(len(text) - 1, 0)))]
    if kind == "flip":
        i = data.draw(st.integers(0, len(text) - 1))
        return text[:i] + bytes([text[i] ^ data.draw(st.integers(1, 255))]) + text[i + 1 :]
    if kind == "deep":
        return b"[" * 100_000 + b"]" * 100_000
    path = data.draw(st.sampled_from(_paths(value)))
    if not path:
        return json.dumps(data.draw(json_values)).encode()
    parent = value
    for step in path[:-1]:
        parent = parent[step]
    if kind == "delete" and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(json_values)
    return json.dumps(value).encode()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real module of two units (objects cached) with a tracked header, and a bundle."""
    tmp = tmp_path_factory.mktemp("records")
    package = tmp / "pkg"
    kernels = package / "kern"
    kernels.mkdir(parents=True)
    (kernels / "a.cpp").write_text(A)
    (kernels / "b.cpp").write_text(B)
    (kernels / "val.h").write_text("#define VAL 3\n")
    cache = tmp / "cache"
    mod = brainevent.load_cpp_dir(kernels, build_directory=cache, auto_register=False)
    objects = sorted((cache / "v1" / "kern" / "objects").glob("*.deps.json"))
    decoder = sorted((cache / "v1" / ".decoder" / "objects").glob("*.deps.json"))
    assert objects and decoder
    single = package / "single"
    single.mkdir()
    (single / "k.cpp").write_text(A)
    (single / "val.h").write_text("#define VAL 3\n")
    env = dict(os.environ, PYTHONPATH=SRC, JAX_PLATFORMS="cpu", BRAINEVENT_CACHE_DIR=str(tmp / "c2"))
    done = subprocess.run(
        [sys.executable, "-m", "brainevent", "build", "--into", str(package), "--platform", "cpu",
         str(single / "k.cpp")],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (bundle_manifest,) = single.glob("_brainevent/*/manifest.json")
    return {
        "cache": cache,
        "entry": Path(mod.cache_dir),
        "key": json.loads((Path(mod.cache_dir) / "manifest.json").read_text())["key"],
        "objects": objects + decoder,
        "bundle_manifest": bundle_manifest,
        "single": single,
        "tmp": tmp,
    }


def _restore(path: Path, original: bytes) -> None:
    path.write_bytes(original)
    os.chmod(path, 0o600)


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


@FUZZ
@given(data=st.data())
def test_manifest(built: dict[str, Any], data: st.DataObject) -> None:
    path = built["entry"] / "manifest.json"
    original = path.read_bytes()
    try:
        path.write_bytes(mutate(data, json.loads(original)))
        store = EntryStore(built["cache"], "kern")
        try:
            entry, _why = store.lookup(CacheKey(built["key"]))
        except BrainEventError:
            return
        if entry is not None:  # a hit must be fully usable: specs, dependencies
            for name in SpecTable(entry.manifest.functions):
                SpecTable(entry.manifest.functions)[name]
            assert entry.manifest.stale_dependency() is None
    finally:
        _restore(path, original)


@FUZZ
@given(data=st.data())
def test_object_and_decoder_records(built: dict[str, Any], data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(built["objects"]))
    original = path.read_bytes()
    key = path.name.removesuffix(".deps.json")
    try:
        path.write_bytes(mutate(data, json.loads(original)))
        out = built["tmp"] / "fetched.o"
        result = ObjectCache(path.parent).fetch(key, out)
        assert result is None or isinstance(result, dict)
    finally:
        _restore(path, original)


@FUZZ
@given(data=st.data())
def test_bundle_manifest(built: dict[str, Any], data: st.DataObject) -> None:
    from brainevent.cache import bundle
    from brainevent.stages.request import SourceUnit

    path = built["bundle_manifest"]
    original = path.read_bytes()
    manifest = json.loads(original)
    source = built["single"] / "k.cpp"
    unit = SourceUnit(str(source), source.read_text(), built["single"], ".cpp")
    record = {k: manifest["inputs"].get(k) for k in bundle.KEYED}
    try:
        path.write_bytes(mutate(data, manifest))
        os.chmod(path, 0o644)
        try:
            found = bundle.lookup([unit], record, "cpu", {})
        except BrainEventError:
            return
        assert found is None or isinstance(found.manifest, Manifest)
    finally:
        path.write_bytes(original)
        os.chmod(path, 0o644)


CHOICE = {
    "primitive": "p", "platform": "cpu", "device_kind": "cpu", "inputs": ["float32[4]"],
    "outputs": ["float32[4]"], "backend": "numba", "timings_ms": {"numba": [0.1, 0.01]}, "config": "c",
    "sources": "s", "versions": {}, "measured": 1.0,
}  # fmt: skip
RUN = {"sources": "s", "records": [{"backend": "numba"}], "measured": 1.0}


@FUZZ
@given(data=st.data(), run=st.booleans())
def test_remembered(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, run: bool) -> None:
    # An entry of our own whose manifest matches its damaged record: only the record's
    # schema check stands between it and a lowering.
    root = tmp_path_factory.mktemp("remembered")
    os.chmod(root, 0o700)
    store = remembered.store_for("p", root)
    parts = ["run", "cpu"] if run else remembered.choice_parts("cpu", "cpu", ["float32[4]"], ["float32[4]"])
    remembered.write(store, parts, "cpu", RUN if run else CHOICE, "fuzzed")
    (entry,) = store.module_dir.glob("*/manifest.json")
    manifest = Manifest.load(entry.parent)
    assert manifest is not None
    artifact = entry.parent / manifest.artifact
    artifact.write_bytes(mutate(data, RUN if run else CHOICE))
    digest = hashlib.sha256(artifact.read_bytes()).hexdigest()
    manifest = manifest._replace(artifact_sha256=digest).stamped(entry.parent)
    manifest.dump(entry.parent)
    loaded = remembered.read(store, parts)
    if loaded is not None and run:
        assert isinstance(loaded["records"], list)
    elif loaded is not None:
        assert isinstance(loaded["backend"], str) and isinstance(loaded["sources"], str)
    remembered.describe(root)
    shutil.rmtree(root)


class _Store:
    """The coordination service's key-value calls, over a dict (what jaxlib's client offers)."""

    def __init__(self, values: dict[str, bytes]) -> None:
        self.values = values

    def key_value_set_bytes(self, key: str, value: bytes, allow_overwrite: bool = False) -> None:
        self.values[key] = value

    def blocking_key_value_get_bytes(self, key: str, timeout_ms: int) -> bytes:
        if key not in self.values:
            raise RuntimeError("DEADLINE_EXCEEDED")
        return self.values[key]

    def key_value_increment(self, key: str, by: int) -> int:
        return 2  # another process claimed the build


@FUZZ
@given(data=st.data())
def test_distributed_status_and_archive(
    built: dict[str, Any], data: st.DataObject, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    payload = exchange.pack(built["entry"])
    if data.draw(st.booleans()):  # a damaged archive with a matching checksum
        raw = bytearray(payload)
        for _ in range(data.draw(st.integers(1, 8))):
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
        payload = bytes(raw[: data.draw(st.integers(0, len(raw)))])
        status = {
            "state": "ok",
            "sha256": hashlib.sha256(payload).hexdigest(),
            "size": len(payload),
            "chunks": 1,
        }
        status_bytes = json.dumps(status).encode()
    else:
        good = {
            "state": "ok",
            "sha256": hashlib.sha256(payload).hexdigest(),
            "size": len(payload),
            "chunks": 1,
        }
        failed = {"state": "error", "type": "CacheError", "message": "m", "data": {"x": 1}}
        status_bytes = mutate(data, data.draw(st.sampled_from([good, failed])))
    target = built["tmp"] / f"recv-{data.draw(st.integers(0, 10**9))}"
    store = EntryStore(target, "kern")
    key = CacheKey(built["key"])
    prefix = f"brainevent/kern/{key.digest}"
    values = {f"{prefix}/status": status_bytes, f"{prefix}/chunk/0": payload}
    monkeypatch.setattr(exchange, "current", lambda: exchange.KeyValue(_Store(values), 1, 2))
    monkeypatch.setenv("BRAINEVENT_DISTRIBUTED_TIMEOUT", "2")
    built_locally = []

    def build() -> Any:
        built_locally.append(True)
        return "local build"

    try:
        got = exchange.get_or_build(store, key, build)
    except BrainEventError:
        return
    finally:
        shutil.rmtree(target, ignore_errors=True)
    assert got == "local build" or not built_locally


def test_damaged_records_end_to_end_rebuild_with_the_right_result(built: dict[str, Any]) -> None:
    """Through the public loader: a damaged dependency row or container type is a rebuild."""
    kernels = built["tmp"] / "pkg" / "kern"
    entry = built["entry"]
    path = entry / "manifest.json"
    original = path.read_bytes()
    for damage in ({"x": [1, 2]}, [1, 2, 3], {"x": "not a row"}, {"x": [1, 2, 3, 4]}):
        data = json.loads(original)
        data["dependencies"] = damage
        path.write_bytes(json.dumps(data).encode())
        mod = brainevent.load_cpp_dir(kernels, build_directory=built["cache"], target_prefix="fuzz")
        assert np.asarray(mod.f(jnp.zeros(2, jnp.float32)))[0] == 3.0


def test_malformed_status_record_is_validated_in_one_place() -> None:
    from brainevent.cache import records

    with pytest.raises(records.RecordError):
        records.distributed_status(b'{"state": "ok", "chunks": "3"}', "status", 4)
    with pytest.raises(records.RecordError):
        records.distributed_status(b'{"state": "error", "data": {"__class__": 1}}', "status", 4)


@pytest.mark.parametrize("measured", [1e300, float("nan"), 2**63])
def test_remembered_listing_survives_a_timestamp_out_of_range(tmp_path: Path, measured: float) -> None:
    """`brainevent cache remembered` lists a choice whose time cannot be shown, instead of crashing."""
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    store = remembered.store_for("p", root)
    parts = remembered.choice_parts("cpu", "cpu", ["float32[4]"], ["float32[4]"])
    remembered.write(store, parts, "cpu", dict(CHOICE, measured=measured), "odd time")
    text = "\n".join(remembered.describe(root))
    assert "p [cpu, cpu] float32[4] -> float32[4]: numba" in text and "measured at an unknown time" in text
