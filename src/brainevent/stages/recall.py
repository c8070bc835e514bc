"""Recall: a load that an earlier process made with the same arguments in the same environment
is served from what that load found, without the stages that make the request and its key.

After a load of inline sources, a sealed record (cache/__init__.py) in the module's cache
directory maps a digest of the call (the loader, every argument, the package version, the
working directory, Python's paths and the environment variables the option defaults and the
toolchain searches read) to what registering the entry the load found needs, the files its
compiler read (as the manifest lists them), and the stamps (inode, size, mtime, ctime) of the
entry's library and manifest and of the files its key depended on: the compilers, XLA's C API
header, the package headers, and the PATH and site-packages directories. A later call with the
same digest whose stamps all hold, whose files pass the cache's ownership checks and whose
compiler-read files are unchanged (cache/deps.py, as on any hit) registers the library without
the key, the manifest or the store. Anything else falls back to the full load, which writes a
new record: an argument that is not plain data, a changed stamp, a record that fails the
ownership checks or its seal, a GPU-detected arch, ``verbose``, ``force_rebuild`` or
``extra_libraries``.

Both kinds of load end in ``register_entry``, here: dlopen the entry's library and register
each function with JAX.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import logging
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from .. import cache, config
from .._version import BINDING_SCHEMA, __version__
from ..cache import records
from ..cache.trust import entry_fix, private_dir, private_file, private_tree
from ..environment import shortcut_environment, variable
from ..errors import CacheError, LoadError
from ..fileio import atomic_write, file_stamps, read_blocks
from ..headers import c_api_header, package_header_files
from ..platforms.devices import BUILD_PLATFORMS, HOST_PLATFORM
from ..runtime.module import CompiledModule, SpecTable
from ..runtime.registry import register_targets, running_platforms

if TYPE_CHECKING:  # a Protocol class costs a first hit more than a plain one: type checkers only
    from collections.abc import Mapping
    from typing import Protocol

    from ..cache.store import CacheEntry
    from ..spec.model import FunctionSpec
    from .request import LoadRequest

    class Registration(Protocol):
        """What registering a module reads of its load's options (``LoadOptions`` has it all)."""

        name: str
        target_prefix: str | None
        auto_register: bool
        allow_cuda_graph: bool
        replace: bool
        extra_libraries: tuple[str, ...]


RECORD_SCHEMA = 2  # 2: the record holds what registering needs, sealed


class Call:
    """One loader call that may be recalled: its digest and where its record lives."""

    __slots__ = ("arguments", "digest", "module_dir", "name", "platform", "root")

    def __init__(self, digest: str, platform: str, root: Path, name: str, arguments: dict[str, Any]) -> None:
        self.digest, self.platform, self.arguments = digest, platform, arguments
        self.root, self.name = root, name
        self.module_dir = root / cache.LAYOUT_VERSION / name  # as the store's (cache/store.py)

    @property
    def record_path(self) -> Path:
        return self.module_dir / f"{self.digest[:32]}{cache.RECALL_SUFFIX}"

    def prepare(self) -> bool:
        """The directories down to the module's exist and pass the ownership checks."""
        return private_tree(self.root, (self.module_dir.parent, self.module_dir), create=False)


def call_of(loader: str, platform: str, arguments: dict[str, Any]) -> Call | None:
    """The call of ``loader`` (a build platform's inline loader) with ``arguments`` (its
    parameters, as given), or None when it is not one to recall."""
    name = arguments.get("name")
    if arguments.get("verbose") or arguments.get("force_rebuild") or arguments.get("extra_libraries"):
        return None
    if not (isinstance(name, str) and _plain_name(name) and _plain(arguments)):
        return None
    environment = shortcut_environment() + config.raw_values()  # the toolchains' (one table) and BRAINEVENT_*
    try:  # where relative and ~ paths resolve (the cache root names the record's directory)
        where = (os.getcwd(), os.path.expanduser("~"), sys.prefix, sys.path, config.overrides())
        root = cache.cache_root(arguments.get("build_directory"))
    except (OSError, RuntimeError):
        return None
    text = repr((RECORD_SCHEMA, __version__, BINDING_SCHEMA, loader, arguments, environment, where))
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return Call(digest, platform, root, name, arguments)


def attempt(
    loader: str, platform: str, arguments: dict[str, Any]
) -> tuple[Call | None, CompiledModule | None]:
    """The call (None: not one to recall) and the module recalled for it (None: load in full)."""
    call = call_of(loader, platform, arguments)
    return call, (None if call is None else recall(call))


def recall(call: Call) -> CompiledModule | None:
    """The module an earlier load of ``call`` found, registered; None to load in full."""
    try:
        found = _recorded_entry(call)
    except (OSError, ValueError, KeyError, TypeError, CacheError):  # RecordError too: the full load tells
        return None
    if found is None:
        return None
    entry, functions = found
    cache.record_use(entry.directory)
    # The arguments hold every parameter of the loader, defaults filled in; the C++ loaders take
    # no allow_cuda_graph, whose table default (True) their modules get.
    given = call.arguments
    chosen = {k: given[k] for k in ("target_prefix", "auto_register", "replace")}
    graphs = given.get("allow_cuda_graph", True)
    options = SimpleNamespace(name=call.name, allow_cuda_graph=graphs, extra_libraries=(), **chosen)
    return register_entry(entry, functions, options, call.platform, None)


def _recorded_entry(call: Call) -> tuple[SimpleNamespace, SpecTable] | None:
    """The entry ``call``'s record names, and its functions, when every check holds. Every field
    is read here: a sealed record lacking one, or of another type, raises for :func:`recall`."""
    path = call.record_path  # the record, then the entry's directory, manifest and library: ours, private
    if not (call.prepare() and private_file(path)):
        return None
    record = cache.unsealed(b"".join(read_blocks(path, limit=1 << 26)))
    if record is None or record.get("schema") != RECORD_SCHEMA or record.get("call") != call.digest:
        return None
    if not (cache.inside_name(record["entry"]) and cache.inside_name(record["library"])):
        return None  # names inside the module's directory only, whoever wrote the record
    directory, fix = call.module_dir / record["entry"], entry_fix(call.name)
    library, manifest = directory / record["library"], directory / cache.MANIFEST_NAME
    owned = private_dir(directory, create=False, fix=fix) and private_file(manifest, fix)
    if not (owned and private_file(library, fix)):
        return None
    files, around = record["files"], _environment_files()
    if files[len(files) - len(around) :] != around:
        return None  # e.g. XLA's headers are now found elsewhere
    if call.platform != HOST_PLATFORM and not (running_platforms() or set()) & set(
        BUILD_PLATFORMS[call.platform].ffi_spellings
    ):
        return None  # whether a device platform can register is the full load's to find out
    if file_stamps([*files, str(library), str(manifest)]) != record["stamps"]:
        return None  # a compiler, a header, a directory searched, the library or its manifest changed
    if record["dependencies"]:  # as on any hit (cache/store.py)
        from ..cache.deps import first_stale

        if first_stale(record["dependencies"], record["dependencies_since_ns"]) is not None:
            return None
    entry = SimpleNamespace(directory=directory, library=library, built_now=False, openmp=record["openmp"])
    entry.artifact_sha256 = record["artifact_sha256"]
    return entry, SpecTable(records.function_table(record["functions"], str(path)))


def stamps_before(call: Call | None, request: LoadRequest) -> tuple[list[str], str] | None:
    """The files the key will depend on and their stamps, taken before the key is derived (a
    file that changes meanwhile fails the record's check)."""
    if call is None:
        return None
    toolchain = request.platform.recall_files()
    if toolchain is None:
        return None
    files = [*toolchain, *_environment_files()]
    return files, file_stamps(files)


def _environment_files() -> list[str]:
    """The files every key depends on besides the toolchain's (XLA's C API header, ours) and
    the directories the searches look in: a recall finds them again (where; the stamps: what)."""
    path = (variable("PATH") or "").split(os.pathsep)
    searched = [d for d in (*path, *(p for p in sys.path if p.endswith("-packages"))) if d]
    return [c_api_header(), *package_header_files(), *searched]


def remember(call: Call | None, stamped: tuple[list[str], str] | None, entry: CacheEntry) -> None:
    """Records that ``call`` found ``entry`` (an entry of the cache, not a bundled build), with
    what registering it needs."""
    if call is None or stamped is None or entry.directory.parent != call.module_dir:
        return
    files, stamps = stamped
    manifest = entry.manifest
    stamps += "\0" + file_stamps([str(entry.library), str(entry.directory / cache.MANIFEST_NAME)])
    if manifest.verify(entry.directory, manifest.key) is not None:
        return  # the library changed since the load checked it: its stamp is of unchecked bytes
    record = {
        "schema": RECORD_SCHEMA,
        "call": call.digest,
        "files": files,
        "stamps": stamps,
        "entry": entry.directory.name,
        "library": manifest.artifact,
        "artifact_sha256": manifest.artifact_sha256,
        "openmp": entry.openmp,
        "functions": manifest.functions,
        "dependencies": manifest.dependencies,
        "dependencies_since_ns": manifest.dependencies_since_ns,
    }
    with contextlib.suppress(OSError, CacheError):
        if call.prepare():
            atomic_write(call.record_path, cache.sealed(record))


def _plain_name(name: str) -> bool:
    """A module name that can only name a directory inside the cache (load_options checks it fully)."""
    return (
        name.isascii()
        and name[:1].isalpha()
        and name.replace("_", "a").replace("-", "a").replace(".", "a").isalnum()
    )


def _plain(value: object) -> bool:
    """Data whose repr says exactly what it is: a str subclass or a Path might behave otherwise."""
    kind = type(value)
    if value is None or kind in (str, int, bool, float):
        return True
    if kind in (list, tuple):
        return all(_plain(item) for item in value)  # type: ignore[attr-defined]
    if kind is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())  # type: ignore[attr-defined]
    return False


# ---- registration: the end of every load, recalled or in full ----


log = logging.getLogger("brainevent")


def register(artifact: CacheEntry, request: LoadRequest) -> CompiledModule:
    """The module, its targets registered unless ``auto_register=False`` or this process's
    JAX cannot run the platform (then built, not registered, with a logged reason)."""
    options, platform = request.options, request.platform
    reason = platform.can_register() if options.auto_register else None
    return register_entry(artifact, artifact.functions(), options, platform.name, reason)


def register_entry(
    artifact: CacheEntry | SimpleNamespace,  # or what a record says of one: the same attributes
    functions: Mapping[str, FunctionSpec],
    options: Registration,
    platform: str,
    reason: str | None,
) -> CompiledModule:
    """``artifact`` as a module of ``platform`` (a build platform), registered when
    ``options.auto_register`` and nothing (``reason``) prevents it."""
    path = artifact.library
    prefix = options.target_prefix or options.name
    targets = {name: f"{prefix}.{name}" for name in functions}
    registered = False
    if options.auto_register and reason is None:
        _preload_libraries(options.extra_libraries)
        if artifact.openmp:
            from ..runtime.openmp import prepare_openmp_runtime

            prepare_openmp_runtime()  # before dlopen: libgomp reads its environment once
        try:
            library = ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL)
        except OSError as exc:
            raise LoadError(
                f"cannot load {path}: {exc}. Rebuild it with force_rebuild=True; if "
                "that fails too, the toolchain produced a library this process cannot load.",
                path=str(path),
            ) from exc
        row = BUILD_PLATFORMS[platform]
        register_targets(
            targets,
            library,
            module=options.name,
            platform=row.ffi_platform,
            artifact_key=artifact.artifact_sha256,  # a rebuild under one key is new code
            command_buffer=options.allow_cuda_graph,
            graph_capture=row.graph_capture,
            replace=options.replace,
        )
        registered = True
    elif options.auto_register:
        log.warning("module %s was built but not registered: %s", options.name, reason)
    return CompiledModule(
        name=options.name,
        path=path,
        platform=platform,
        functions=functions,
        targets=targets,
        registered=registered,
        built_now=artifact.built_now,
        cache_dir=artifact.directory,
        unregistered_reason=reason,
    )


def _preload_libraries(names: tuple[str, ...]) -> None:
    """The NVIDIA libraries the module links, loaded first so its DT_NEEDED entries resolve to them."""
    if names:
        from ..toolchain.nvidia_libs import preload

        preload(names)
