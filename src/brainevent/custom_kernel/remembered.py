"""Remembered benchmark winners, kept in the cache directory for later processes.

``benchmark(remember=True)`` writes, per primitive, one JSON file
``<cache root>/choices/<primitive>-<hash>.json`` holding:

- *choices*: the fastest backend per (platform, device kind, operand shapes and dtypes), which
  a later lowering of the primitive with those operands on that kind of device uses without
  measuring again;
- *benchmarks*: the records of each benchmark run (per platform, device kind, backends and
  configurations), which a later ``benchmark(remember=True)`` of the same run returns
  instead of timing again.

Each entry carries the fingerprint of the platform's backends (``fingerprint.py``): an entry
whose backends have changed since is stale, ignored, and replaced by the next measurement.
Files are written private (directory 0700, file 0600, renamed into place) and read only when
they pass the cache's trust checks; a file another user could have written is ignored with a
warning, never used.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CacheError

SCHEMA = 1
DIRECTORY = "choices"
log = logging.getLogger(__name__)

_lock = threading.Lock()
_parsed: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}  # path -> (stat stamp, data)
_warned: set[str] = set()


def root_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    from ..cache.store import cache_root

    return cache_root(cache_dir)


def file_for(name: str, root: Path) -> Path:
    """The file of primitive ``name``: a readable prefix plus a hash, since names are free text."""
    slug = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:64]
    return root / DIRECTORY / f"{slug}-{hashlib.sha256(name.encode()).hexdigest()[:12]}.json"


def aval_text(aval: Any) -> str:
    return f"{np.dtype(aval.dtype).name}[{','.join(str(int(d)) for d in aval.shape)}]"


def _key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=repr).encode()).hexdigest()[:32]


def choice_key(platform: str, device_kind: str, inputs: Sequence[str], outputs: Sequence[str]) -> str:
    return _key("choice", platform, device_kind, list(inputs), list(outputs))


def device_kind(platform: str) -> str | None:
    """The kind of ``platform``'s first device (what benchmark() times on), or None without one."""
    import jax

    try:
        return str(jax.devices(platform)[0].device_kind)
    except RuntimeError:
        return None


# -- reading ---------------------------------------------------------------------------------


def _warn_once(path: Path, exc: Exception) -> None:
    key = f"{path}:{type(exc).__name__}"
    with _lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(f"ignoring the remembered backend choices in {path}: {exc}", UserWarning, stacklevel=4)


def load(path: Path) -> dict[str, Any] | None:
    """The file's content, if it exists and passes the trust checks; None otherwise."""
    from ..cache import records
    from ..cache.trust import check_root, private_dir, private_file
    from ..fileio import read_blocks

    fix = "Remove it (`brainevent choices clear`) or point BRAINEVENT_CACHE_DIR elsewhere."
    try:
        root = path.parent.parent
        if not (check_root(root, create=False) and private_dir(path.parent, create=False, fix=fix)):
            return None
        if not private_file(path, fix=fix):
            return None
        st = os.lstat(path)
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        with _lock:
            hit = _parsed.get(str(path))
        if hit is not None and hit[0] == stamp:
            return hit[1]
        data = records.choices(records.parse_json(b"".join(read_blocks(path)), str(path)), SCHEMA, str(path))
    except CacheError as exc:
        _warn_once(path, exc)
        return None
    except (OSError, ValueError) as exc:  # RecordError is a ValueError: measured again
        log.warning("ignoring unreadable remembered choices %s: %s", path, exc)
        return None
    with _lock:
        _parsed[str(path)] = (stamp, data)
    return data


def lookup(
    name: str,
    platform: str,
    inputs: Sequence[str],
    outputs: Sequence[str],
    sources: Callable[[], str],
) -> str | None:
    """The remembered backend for these operands on this platform's device, if still valid."""
    root = root_dir()
    path = file_for(name, root)
    if not os.path.lexists(path):
        return None  # the common case: one lstat
    kind = device_kind(platform)
    data = load(path)
    if kind is None or data is None:
        return None
    entry = data["choices"].get(choice_key(platform, kind, inputs, outputs))
    if not isinstance(entry, dict) or entry.get("sources") != sources():
        return None
    backend = entry.get("backend")
    return backend if isinstance(backend, str) else None


# -- a benchmark run and what it stores ----------------------------------------------------------


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
    path: Path
    key: str = field(init=False)

    def __post_init__(self) -> None:
        self.key = _key("benchmark", self.platform, self.device_kind, self.backends, self.configs)

    @classmethod
    def describe(
        cls, primitive: Any, call: Callable[..., Any], platform: str, backends: list[str], configs: list[Any]
    ) -> Run:
        """The run of ``backends`` of ``primitive`` (an XLACustomKernel) on ``configs``."""
        from .benchmark import _device
        from .fingerprint import sources_fingerprint, versions

        entries = primitive._kernels[platform]
        described = [
            {
                "label": c.name,
                "kwargs": repr(sorted(c.kernel_kwargs.items())),
                "signatures": operand_signatures(call, primitive.primitive, c.args, c.kernel_kwargs),
            }
            for c in configs
        ]
        return cls(
            primitive.name,
            platform,
            str(_device(platform).device_kind),
            backends,
            sources_fingerprint(entries),
            versions(list(entries)),
            described,
            file_for(primitive.name, root_dir()),
        )

    def result(self, name: str) -> Any:
        """The stored result of this run (``remembered`` set), or None if none is valid."""
        from .benchmark import BenchmarkRecord, BenchmarkResult

        data = load(self.path)
        entry = data["benchmarks"].get(self.key) if data is not None else None
        if not isinstance(entry, dict) or entry.get("sources") != self.sources:
            return None
        try:
            records = [BenchmarkRecord(**r) for r in entry["records"]]
        except (KeyError, TypeError):  # written by another version of this schema's writer
            return None
        result = BenchmarkResult(records, primitive_name=name)
        result.remembered = True
        return result

    def store(self, result: Any) -> int:
        """Stores the run and, per configuration, its winner for each operand signature; returns
        the number of choices stored."""
        now = time.time()
        records = [_jsonable(dict(vars(r))) for r in result.records]
        choices: dict[str, dict[str, Any]] = {}
        for config in self.configs:
            fastest = result.fastest(config["label"])
            if fastest is None:
                continue
            timings = {
                r["backend"]: [r["median_ms"], r["noise_ms"]]
                for r in records
                if r["label"] == config["label"] and r["success"]
            }
            for inputs, outputs in config["signatures"]:
                choices[choice_key(self.platform, self.device_kind, inputs, outputs)] = {
                    "platform": self.platform,
                    "device_kind": self.device_kind,
                    "inputs": inputs,
                    "outputs": outputs,
                    "backend": fastest.backend,
                    "timings_ms": timings,  # backend -> [median, noise]
                    "config": config["label"],
                    "sources": self.sources,
                    "versions": self.versions,
                    "measured": now,
                }
        run = {
            "platform": self.platform,
            "device_kind": self.device_kind,
            "backends": self.backends,
            "sources": self.sources,
            "records": records,
            "measured": now,
        }

        def change(data: dict[str, Any]) -> None:
            data["benchmarks"][self.key] = run
            data["choices"].update(choices)

        update(self.name, self.path, change)
        return len(choices)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, np.generic):
        return value.item()
    return repr(value)


def update(name: str, path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Read, change and write the file of primitive ``name`` under its lock."""
    import filelock

    from .. import config
    from ..cache.trust import check_root, private_dir, write_private

    check_root(path.parent.parent, create=True)
    private_dir(path.parent, create=True)
    lock = filelock.FileLock(str(path.with_name(path.name + ".lock")), mode=0o600)
    try:
        lock.acquire(timeout=config.LOCK_TIMEOUT.get())
    except filelock.Timeout:
        raise CacheError(
            f"could not remember benchmark results: {lock.lock_file} stayed locked for "
            f"{config.LOCK_TIMEOUT.get():.0f} s; remove it if no other process is benchmarking "
            f"{name!r}",
            path=str(lock.lock_file),
        ) from None
    try:
        data = load(path) if os.path.lexists(path) else None
        fresh = {"schema": SCHEMA, "primitive": name, "choices": {}, "benchmarks": {}}
        data = json.loads(json.dumps(data)) if data is not None else fresh  # a copy to change
        change(data)
        write_private(path, json.dumps(data, indent=1, sort_keys=True).encode())
    finally:
        lock.release()


def operand_signatures(
    call: Callable[..., Any], primitive: Any, args: Sequence[Any], kwargs: dict[str, Any]
) -> list[list[list[str]]]:
    """[inputs, outputs] of every distinct bind of ``primitive`` when ``call(*args, **kwargs)``
    is traced: what a lowering of it will see."""
    import functools

    import jax

    closed = jax.make_jaxpr(functools.partial(call, **kwargs))(*args)
    found: list[list[list[str]]] = []

    def walk(jaxpr: Any) -> None:
        for eqn in jaxpr.eqns:
            if eqn.primitive is primitive:
                signature = [
                    [aval_text(v.aval) for v in eqn.invars],
                    [aval_text(o) for o in eqn.params["outs"]],
                ]
                if signature not in found:
                    found.append(signature)
            for param in eqn.params.values():
                for sub in _subjaxprs(param):
                    walk(sub)

    walk(closed.jaxpr)
    return found


def _subjaxprs(param: Any) -> Iterable[Any]:
    if hasattr(param, "eqns"):
        yield param
    elif hasattr(param, "jaxpr") and hasattr(param.jaxpr, "eqns"):
        yield param.jaxpr
    elif isinstance(param, (tuple, list)):
        for item in param:
            yield from _subjaxprs(item)


# -- listing and clearing, for the command line ---------------------------------------------------


def entries(root: Path) -> list[tuple[str, Path, dict[str, Any]]]:
    """(primitive, file, data) of every readable choices file under ``root``, by primitive name."""
    from ..cache.trust import check_root, private_dir

    directory = root / DIRECTORY
    if not (check_root(root, create=False) and private_dir(directory, create=False)):
        return []
    found = []
    for path in sorted(directory.glob("*.json")):
        data = load(path)
        if data is not None:
            found.append((str(data.get("primitive", path.stem)), path, data))
    return sorted(found, key=lambda item: item[0])


def describe(root: Path) -> list[str]:
    """Lines for ``brainevent choices``: each remembered choice with the timings behind it."""
    lines = [f"remembered backend choices in {root / DIRECTORY}"]
    count = 0
    for name, _path, data in entries(root):
        for entry in sorted(
            data["choices"].values(), key=lambda e: (e["platform"], e["device_kind"], e["inputs"])
        ):
            count += 1
            timings = entry.get("timings_ms", {})
            others = ", ".join(
                f"{b} {t[0]:.4f}"
                for b, t in sorted(timings.items(), key=lambda kv: kv[1][0])
                if b != entry["backend"]
            )
            best = timings.get(entry["backend"], [float("nan")])[0]
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.get("measured", 0)))
            lines.append(
                f"  {name} [{entry['platform']}, {entry['device_kind']}] {', '.join(entry['inputs'])} -> "
                f"{', '.join(entry['outputs'])}: {entry['backend']} ({best:.4f} ms"
                + (f"; {others}" if others else "")
                + f") measured {when}"
            )
    lines.append(f"{count} remembered choice(s)")
    return lines


def clear(root: Path) -> int:
    """Removes every choices file; returns how many."""
    directory = root / DIRECTORY
    removed = 0
    for path in sorted(directory.glob("*.json*")) if directory.is_dir() else []:
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        removed += path.suffix == ".json"
    with _lock:
        _parsed.clear()
    return removed
