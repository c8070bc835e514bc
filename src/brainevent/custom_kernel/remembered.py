"""Remembered benchmark winners, kept as cache entries (``v1/remembered.<primitive>-<hash>/``).

A *choice* (platform, device kind, one bind's operand types -> fastest backend) is used by
later lowerings; a *run* is returned by a later ``benchmark(remember=True)`` of the same run.
Each holds the backends' fingerprint (what "the source" of a backend is): a stale one is
ignored, an untrusted one too, with a warning. docs/custom-kernels.md, "Remembered choices".
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import sys
import sysconfig
import time
import types
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..backends import LIBRARIES, installed_version
from ..cache import cache_root, records
from ..cache.key import CacheKey
from ..cache.store import EntryStore
from ..errors import CacheError
from ..fileio import atomic_write, read_blocks
from .benchmark import BenchmarkRecord, BenchmarkResult, _device
from .kernels import KernelEntry

PREFIX = "remembered."  # the module directories of remembered entries (never a C identifier)
ARTIFACT = "remembered.json"
log = logging.getLogger(__name__)
_warned: set[str] = set()


def store_for(name: str, root: Path | None = None) -> EntryStore:
    """The entries of primitive ``name``: a readable prefix plus a hash, since names are free text."""
    slug = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:64]
    digest = hashlib.sha256(name.encode()).hexdigest()[:12]
    return EntryStore(cache_root(root), f"{PREFIX}{slug}-{digest}")


def aval_text(aval: Any) -> str:
    return f"{np.dtype(aval.dtype).name}[{','.join(str(int(d)) for d in aval.shape)}]"


def key_of(parts: Sequence[Any]) -> CacheKey:
    return CacheKey(
        hashlib.sha256(json.dumps(list(parts), sort_keys=True, default=repr).encode()).hexdigest()
    )


def choice_parts(platform: str, device_kind: str, inputs: Sequence[str], outputs: Sequence[str]) -> list[Any]:
    return ["choice", platform, device_kind, list(inputs), list(outputs)]


def read(store: EntryStore, parts: Sequence[Any], *, use: bool = True) -> dict[str, Any] | None:
    """Entry ``parts`` if published and trusted, else None (``use``: record the use, for pruning)."""
    key = key_of(parts)
    try:
        entry = store.hit(key) if use else store.lookup(key)[0]
        if entry is None:
            return None
        where = str(entry.library)
        return records.remembered(records.parse_json(b"".join(read_blocks(where)), where), parts[0], where)
    except CacheError as exc:
        if str(exc) not in _warned:  # once per process, whichever call site meets the entry
            _warned.add(str(exc))
            warnings.warn(f"ignoring a remembered benchmark result: {exc}", UserWarning, stacklevel=3)
    except (OSError, ValueError) as exc:  # RecordError is a ValueError: measured again
        log.warning("ignoring an unreadable remembered benchmark result in %s: %s", store.module_dir, exc)
    return None


def write(store: EntryStore, parts: Sequence[Any], platform: str, record: dict[str, Any], what: str) -> None:
    """Publishes ``record`` as entry ``parts``, replacing the one there (a stale measurement)."""
    from ..cache.manifest import Manifest
    from ..cache.publish import build_slot, publish

    key = key_of(parts)
    data = json.dumps(record, indent=1, sort_keys=True).encode()
    with build_slot(store, key, force=True) as slot:
        assert slot.staging is not None
        atomic_write(slot.staging / ARTIFACT, data)
        inputs = {"remembered": list(parts), "describe": what}
        sha = hashlib.sha256(data).hexdigest()
        about = {"remembered": list(parts)}  # what it is about: each measurement is a version of it
        made = Manifest(key.digest, store.name, platform, ARTIFACT, sha, {}, about, inputs, time.time())
        publish(store, slot, made)


def lookup(
    name: str, platform: str, avals_in: Sequence[Any], outs: Sequence[Any], entries: Mapping[str, KernelEntry]
) -> str | None:
    """The remembered backend of ``entries`` for these operands on this platform's device, if still valid."""
    store = store_for(name)
    if not os.path.lexists(store.module_dir):
        return None  # the common case: one lstat
    import jax

    try:
        kind = str(jax.devices(platform)[0].device_kind)  # the device benchmark() times on
    except RuntimeError:
        return None
    ins, outputs = [aval_text(a) for a in avals_in], [aval_text(o) for o in outs]
    entry = read(store, choice_parts(platform, kind, ins, outputs))
    if entry is None or entry["backend"] not in entries or entry["sources"] != sources_fingerprint(entries):
        return None
    return str(entry["backend"])


# -- the fingerprint of a platform's backends ----------------------------------------------------

_PLAIN = (int, float, complex, str, bytes, bool, type(None))
_MAX_DEPTH = 8
# Attributes under which kernel objects keep the Python function they were made from:
# methods (__func__), Numba dispatchers (py_func), Triton JITFunction (fn), Warp Kernel (func),
# functools.wraps (__wrapped__).
_WRAPPED = ("__func__", "py_func", "fn", "func", "__wrapped__")


@functools.lru_cache(maxsize=1)
def _library_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths.get(k, "") for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return ("<frozen", *sorted(r for r in roots if r))  # prefixes, for str.startswith


def _is_library_code(code: types.CodeType) -> bool:
    name = code.co_filename
    return "site-packages" in name or "dist-packages" in name or name.startswith(_library_roots())


def _is_plain(obj: Any) -> bool:
    return isinstance(obj, _PLAIN) or type(obj).__module__ == "numpy"  # NumPy scalars and dtypes


def _unwrap(obj: Any) -> types.FunctionType | None:
    """The Python function behind a function or a kernel object, if any."""
    for _ in range(4):
        if isinstance(obj, types.FunctionType):
            return obj
        obj = next((getattr(obj, a) for a in _WRAPPED if callable(getattr(obj, a, None))), None)
    return None


class _Hasher:
    def __init__(self) -> None:
        self._digest = hashlib.sha256()
        self._seen: set[int] = set()

    def put(self, tag: str, data: str | bytes) -> None:
        raw = data.encode() if isinstance(data, str) else data
        self._digest.update(f"{tag}:{len(raw)}:".encode())
        self._digest.update(raw)

    def value(self, obj: Any, depth: int) -> None:
        if _is_plain(obj):
            self.put("const", repr(obj))
            return
        if isinstance(obj, (tuple, list)):
            self.put("seq", str(len(obj)))
            for item in obj:
                self.value(item, depth + 1)
            return
        if isinstance(obj, frozenset):
            self.put("set", repr(sorted(map(repr, obj))))
            return
        if id(obj) in self._seen or depth > _MAX_DEPTH:
            self.put("again", type(obj).__qualname__)
            return
        self._seen.add(id(obj))
        if isinstance(obj, functools.partial):
            self.put("partial", "")
            self.value((obj.func, obj.args, sorted(obj.keywords.items())), depth)
            return
        target = getattr(obj, "target", None)
        if type(obj).__name__ == "KernelFunction" and isinstance(target, str):
            self.put("compiled", f"{target}:{_artifact_key(target)}")
            return
        function = _unwrap(obj)
        if function is None or _is_library_code(function.__code__):
            self.put("object", f"{type(obj).__module__}.{type(obj).__qualname__}")
            return
        self.function(function, depth)

    def function(self, fn: types.FunctionType, depth: int) -> None:
        self.put("function", fn.__qualname__)
        names = self.code(fn.__code__)
        for cell in fn.__closure__ or ():
            try:
                self.value(cell.cell_contents, depth + 1)
            except ValueError:  # an empty cell
                self.put("cell", "empty")
        self.value(fn.__defaults__ or (), depth + 1)
        self.value(sorted((fn.__kwdefaults__ or {}).items()), depth + 1)
        scope = fn.__globals__
        for name in sorted(n for n in names if n in scope):
            found = scope[name]
            plain = _is_plain(found)
            # A module is a library, stood for by its version; other globals only of fn's own module.
            inner = None if plain or isinstance(found, types.ModuleType) else _unwrap(found)
            if plain or (inner is not None and inner.__module__ == fn.__module__):
                self.put("global", name)
                self.value(found, depth + 1)

    def code(self, code: types.CodeType) -> set[str]:
        """Adds a code object and its nested ones; returns every global name they use."""
        self.put("code", code.co_code)
        self.put("names", " ".join(code.co_names))
        names = set(code.co_names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                names |= self.code(const)
            else:
                self.value(const, _MAX_DEPTH)
        return names


def _artifact_key(target: str) -> str:
    """The content key of the build registered under ``target`` in this process, or "" if none."""
    from ..runtime import registry

    with registry._lock:
        keys = sorted(r.artifact_key for (name, _), r in registry._targets.items() if name == target)
    return ",".join(keys)


def entry_fingerprint(entry: KernelEntry) -> str:
    hasher = _Hasher()
    hasher.put("backend", f"{entry.backend}@{entry.platform}")
    hasher.value(entry.kernel_generator, 0)
    return hasher._digest.hexdigest()


@functools.cache
def _version(package: str) -> str:
    return installed_version(package) or "absent"


def versions(backends: list[str]) -> dict[str, str]:
    """The versions a measurement depends on: Python, JAX, jaxlib, brainevent, each backend's library."""
    from .._version import __version__

    python = ".".join(map(str, sys.version_info[:3]))
    packages = ["jax", "jaxlib", *(LIBRARIES[b].package for b in backends if b in LIBRARIES)]
    return {"python": python, "brainevent": __version__} | {p: _version(p) for p in packages}


def sources_fingerprint(entries: Mapping[str, KernelEntry]) -> str:
    """One digest of every backend of a platform, in definition order, and the versions."""
    hasher = hashlib.sha256()
    for backend, entry in entries.items():
        hasher.update(f"{backend}={entry_fingerprint(entry)};".encode())
    hasher.update(repr(sorted(versions(list(entries)).items())).encode())
    return hasher.hexdigest()


@dataclass
class Run:
    """What one ``benchmark(remember=True)`` run is about, and where it is kept."""

    name: str
    platform: str
    device_kind: str
    backends: list[str]
    sources: str
    versions: dict[str, str]
    configs: list[dict[str, Any]]  # label, kwargs and the primitive's operand signatures

    @property
    def parts(self) -> list[Any]:
        return ["run", self.platform, self.device_kind, self.backends, self.configs]

    @classmethod
    def describe(
        cls, primitive: Any, call: Callable[..., Any], platform: str, backends: list[str], configs: list[Any]
    ) -> Run:
        """The run of ``backends`` of ``primitive`` (an XLACustomKernel) on ``configs``."""
        entries = primitive._kernels[platform]
        described = [
            {
                "label": c.name,
                "kwargs": repr(sorted(c.kernel_kwargs.items())),
                "signatures": operand_signatures(call, primitive.primitive, c.args, c.kernel_kwargs),
            }
            for c in configs
        ]
        kind, fingerprint = str(_device(platform).device_kind), sources_fingerprint(entries)
        return cls(primitive.name, platform, kind, backends, fingerprint, versions(list(entries)), described)

    def result(self) -> BenchmarkResult | None:
        """The stored result of this run (``remembered`` set), or None if none is valid."""
        store = store_for(self.name)
        entry = read(store, self.parts)
        if entry is None or entry["sources"] != self.sources:
            return None
        try:
            records = [BenchmarkRecord(**r) for r in entry["records"]]
        except TypeError:  # written by another version of this schema's writer
            return None
        result = BenchmarkResult(records, primitive_name=self.name, remembered=True)
        # A winner whose entry is gone or untrusted is measured again, with the whole run.
        return None if any(read(store, choice) is None for choice, *_ in self._winners(result)) else result

    def _winners(self, result: BenchmarkResult) -> Iterator[tuple[list[Any], str, list[str], list[str], str]]:
        """(choice parts, configuration, inputs, outputs, fastest backend) of every signature measured."""
        for config in self.configs:
            fastest = result.fastest(config["label"])
            if fastest is None:
                continue
            for inputs, outputs in config["signatures"]:
                parts = choice_parts(self.platform, self.device_kind, inputs, outputs)
                yield parts, config["label"], inputs, outputs, fastest.backend

    def store(self, result: BenchmarkResult) -> None:
        """Publishes the run and its winner for each operand signature."""
        store, now = store_for(self.name), time.time()
        # As JSON makes them: NumPy scalars as numbers, any other object as its repr.
        text = json.dumps(
            [vars(r) for r in result.records],
            default=lambda v: v.item() if isinstance(v, np.generic) else repr(v),
        )
        records = json.loads(text)
        where = f"{self.platform}, {self.device_kind}"
        run = {"backends": self.backends, "sources": self.sources, "records": records, "measured": now}
        write(store, self.parts, self.platform, run, f"run [{where}] of {', '.join(self.backends)}")
        for parts, label, inputs, outputs, backend in self._winners(result):
            ran = [r for r in records if r["label"] == label and r["success"]]
            timings = {r["backend"]: [r["median_ms"], r["noise_ms"]] for r in ran}
            choice: dict[str, Any] = {"primitive": self.name, "sources": self.sources, "measured": now}
            choice.update(inputs=inputs, outputs=outputs, backend=backend, timings_ms=timings, config=label)
            choice.update(platform=self.platform, device_kind=self.device_kind, versions=self.versions)
            what = f"choice [{where}] {', '.join(inputs)} -> {', '.join(outputs)}: {backend}"
            write(store, parts, self.platform, choice, what)


def operand_signatures(
    call: Callable[..., Any], primitive: Any, args: Sequence[Any], kwargs: dict[str, Any]
) -> list[list[list[str]]]:
    """[inputs, outputs] of every distinct bind of ``primitive`` when ``call(*args, **kwargs)``
    is traced: what a lowering of it will see."""
    import jax
    from jax.extend.core import subjaxprs

    found: list[list[list[str]]] = []

    def walk(jaxpr: Any) -> None:
        for eqn in (e for e in jaxpr.eqns if e.primitive is primitive):
            signature = [[aval_text(v.aval) for v in eqn.invars], [aval_text(o) for o in eqn.params["outs"]]]
            if signature not in found:
                found.append(signature)
        for sub in subjaxprs(jaxpr):
            walk(sub)

    walk(jax.make_jaxpr(functools.partial(call, **kwargs))(*args).jaxpr)
    return found


# -- listing and clearing, for the command line ---------------------------------------------------


def describe(root: Path) -> list[str]:
    """Lines for ``brainevent choices``: each remembered choice with the timings behind it."""
    from ..cache.admin import iter_entries

    lines = [f"remembered backend choices in {root}"]
    found = []
    for info in iter_entries(root):
        parts = info.manifest.inputs.get("remembered") if info.manifest is not None else None
        if info.module.startswith(PREFIX) and isinstance(parts, list) and parts[:1] == ["choice"]:
            entry = read(EntryStore(root, info.module), parts, use=False)
            found += [entry] if entry is not None else []
    for entry in sorted(found, key=lambda e: (e["primitive"], e["platform"], e["device_kind"], e["inputs"])):
        timings = entry.get("timings_ms", {})
        ranked = sorted(timings.items(), key=lambda kv: kv[1][0])
        others = ", ".join(f"{b} {t[0]:.4f}" for b, t in ranked if b != entry["backend"])
        best = timings.get(entry["backend"], [float("nan")])[0]
        try:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.get("measured", 0)))
        except (OverflowError, OSError, ValueError):  # a damaged record's timestamp: still listed
            when = "at an unknown time"
        lines.append(
            f"  {entry['primitive']} [{entry['platform']}, {entry['device_kind']}] "
            f"{', '.join(entry['inputs'])} -> {', '.join(entry['outputs'])}: {entry['backend']} "
            f"({best:.4f} ms" + (f"; {others}" if others else "") + f") measured {when}"
        )
    lines.append(f"{len(found)} remembered choice(s)")
    return lines


def clear(root: Path) -> int:
    """Removes every remembered entry; returns how many."""
    from ..cache.admin import clear as clear_module
    from ..cache.admin import iter_entries

    modules = {e.module for e in iter_entries(root) if e.module.startswith(PREFIX)}
    return sum(clear_module(root, module)[0] for module in sorted(modules))
