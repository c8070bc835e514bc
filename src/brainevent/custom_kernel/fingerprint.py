"""What "the source" of a backend is, so that a remembered benchmark winner goes stale with it.

A function's code, and the constants and user functions it reaches through closures, defaults
and its own module's globals; a compiled function's FFI target and build key; the versions of
Python, JAX, brainevent and the backend's library. Not comments, layout or library code
(docs/custom-kernels.md, "Remembered choices").
"""

from __future__ import annotations

import functools
import hashlib
import sys
import sysconfig
import types
from collections.abc import Mapping
from typing import Any

from .kernels import KernelEntry
from .libraries import LIBRARIES

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
    return tuple(sorted(r for r in roots if r))


def _is_library_code(code: types.CodeType) -> bool:
    name = code.co_filename
    return (
        "site-packages" in name
        or "dist-packages" in name
        or name.startswith("<frozen")
        or any(name.startswith(root) for root in _library_roots())
    )


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
        if isinstance(obj, _PLAIN):
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
        if type(obj).__module__ == "numpy":  # NumPy scalars and dtypes
            self.put("numpy", repr(obj))
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
            plain = isinstance(found, _PLAIN) or type(found).__module__ == "numpy"
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
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "absent"


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
