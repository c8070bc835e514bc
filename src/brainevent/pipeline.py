"""From sources to a registered module: key, get-or-build, load, register.

The platform-specific parts (compiler, flags, link) live in a :class:`Backend`;
this module holds the sequence every loader shares. A cache hit computes the key
from the raw inputs (no spec parsing, no subprocess), verifies the entry's
manifest and loads it; specs are re-read from the manifest.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .build.step import BuildStep

from . import bundle, distributed
from ._version import BINDING_SCHEMA, __version__
from .cache.deps import DependencyRecord
from .cache.key import CacheKey, KeyBuilder
from .cache.manifest import Manifest, sha256_file
from .cache.store import CacheEntry, EntryStore, cache_root
from .errors import CompileError, LoadError, SpecError, ToolchainError
from .headers import INCLUDE_DIR
from .logs import to_stderr
from .runtime.module import CompiledModule
from .runtime.registry import register_targets
from .spec.model import FunctionSpec, Param, Role

log = logging.getLogger("brainevent")

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[.-][A-Za-z0-9_]+)*")


@dataclass(frozen=True)
class SourceUnit:
    """One translation unit: inline text (``directory`` None) or a file's contents."""

    display_name: str  # what diagnostics and __FILE__ show: "<name>.cpp" or the file's path
    text: str
    directory: Path | None
    suffix: str  # ".cpp" or ".cu": decides the compiler


@dataclass
class LoadOptions:
    name: str
    functions: Any
    extra_cflags: Sequence[str] = ()
    extra_ldflags: Sequence[str] = ()
    extra_include_paths: Sequence[str] = ()
    build_directory: str | None = None
    verbose: bool = False
    force_rebuild: bool = False
    auto_register: bool = True
    target_prefix: str | None = None
    optimization_level: int = 3
    use_fast_math: bool = False
    ninja_workers: int | None = None
    allow_cuda_graph: bool = True
    replace: bool = False  # let this module take over targets another module registered
    extra: dict[str, Any] = field(default_factory=dict)  # backend-specific options


class Backend(Protocol):
    platform: str  # "cpu" or "cuda": the kind of artifact
    jax_platform: str  # the platform name given to jax.ffi.register_ffi_target

    def key_inputs(self, options: LoadOptions) -> dict[str, Any]: ...

    def portable_inputs(self, options: LoadOptions) -> dict[str, Any]: ...

    def compile_steps(
        self,
        options: LoadOptions,
        kernel_units: Sequence[tuple[str, SourceUnit]],
        binding: str,
        library: str,
    ) -> list[BuildStep]: ...

    def covered_dirs(self) -> list[str]:
        """Header directories whose contents the toolchain's identity already covers."""
        ...

    def can_register(self) -> str | None:
        """None if this process's JAX can run the artifact, else why not."""
        ...

    def preprocess_command(
        self, options: LoadOptions, unit: SourceUnit, source: str, output: str
    ) -> list[str]:
        """The unit's compile command with -E instead of -c (see build/preprocess.py)."""
        ...


def check_name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _NAME_RE.fullmatch(value) or len(value) > 100:
        raise SpecError(
            f"{what} {value!r} is not a valid module name: use letters, digits and '_' "
            "(dots and dashes between them), starting with a letter, at most 100 characters, "
            "e.g. 'my_kernels'.",
            value=value,
        )
    return value


def as_flags(value: Any, label: str) -> tuple[str, ...]:
    """A list of flags as a tuple; a bare string is refused (it would split into characters)."""
    if value is None:
        return ()
    if (
        isinstance(value, str)
        or not isinstance(value, (list, tuple))
        or not all(isinstance(v, str) for v in value)
    ):
        raise SpecError(f'{label}={value!r} must be a list of strings, e.g. ["-DFOO=1"].', value=value)
    for flag in value:
        problem = _flag_problem(flag)
        if problem is not None:
            raise SpecError(
                f"{label} entry {flag!r} {problem}; a compiler command line cannot carry it. "
                "Give each flag as its own list item, without line breaks.",
                value=flag,
            )
    return tuple(value)


def _flag_problem(flag: str) -> str | None:
    if "\n" in flag or "\r" in flag:
        return "contains a line break"
    if "\0" in flag:
        return "contains a NUL character"
    try:
        flag.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"contains {flag[exc.start]!r}, a lone surrogate, at position {exc.start}"
    return None


def check_options(options: LoadOptions) -> None:
    check_name(options.name, "name")
    if options.target_prefix is not None:
        check_name(options.target_prefix, "target_prefix")
    level = options.optimization_level
    if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= 3:
        raise SpecError(
            f"optimization_level={level!r} is not valid: expected an int 0, 1, 2 or 3 (-O0..-O3).",
            value=level,
        )
    if options.ninja_workers is not None and (
        not isinstance(options.ninja_workers, int) or options.ninja_workers < 1
    ):
        raise SpecError(
            f"ninja_workers={options.ninja_workers!r} must be a positive int or None (all CPUs).",
            value=options.ninja_workers,
        )
    if not isinstance(options.replace, bool):
        raise SpecError(f"replace={options.replace!r} must be True or False.", value=options.replace)


@cache
def _package_headers_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted((INCLUDE_DIR / "brainevent").glob("*.h")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _functions_key(functions: Any) -> Any:
    """The raw `functions` argument in a keyable form (resolution happens only on a miss)."""
    if functions is None:
        return None
    if isinstance(functions, Mapping):
        return {str(k): _tokens_key(v) for k, v in functions.items()}
    if isinstance(functions, (list, tuple)):
        return [str(f) for f in functions]
    return repr(functions)  # resolved (and rejected) on the build path


def _tokens_key(tokens: Any) -> Any:
    # None (the source decides) stays None; anything unexpected is refused on the build path.
    if tokens is None or isinstance(tokens, str):
        return tokens
    if isinstance(tokens, (list, tuple)):
        return [str(t) for t in tokens]
    return repr(tokens)


def _unit_key(units: Sequence[SourceUnit]) -> list[Any]:
    return [[u.display_name, u.suffix, u.text] for u in units]


def _spec_to_json(spec: FunctionSpec) -> dict[str, Any]:
    return {
        "params": [[p.role.value, p.name, p.dtype, p.cxx_type] for p in spec.params],
        "source_file": spec.source_file,
        "line": spec.line,
        "scope": spec.scope,
    }


def _spec_from_json(name: str, data: Mapping[str, Any]) -> FunctionSpec:
    params = tuple(Param(Role(r), n, d, c) for r, n, d, c in data["params"])
    return FunctionSpec(
        name, params, data.get("source_file", ""), int(data.get("line", 0)), data.get("scope", "")
    )


def _unit_file_names(units: Sequence[SourceUnit]) -> list[str]:
    names = []
    for i, unit in enumerate(units):
        stem = re.sub(r"[^A-Za-z0-9_]", "_", Path(unit.display_name).stem)[:40]
        names.append(f"k{i}_{stem}{unit.suffix}")
    return names


def _assign_functions(units: Sequence[SourceUnit], specs: Sequence[FunctionSpec]) -> list[list[FunctionSpec]]:
    by_unit: list[list[FunctionSpec]] = [[] for _ in units]
    index = {u.display_name: i for i, u in enumerate(units)}
    for spec in specs:
        by_unit[index[spec.source_file]].append(spec)
    return by_unit


def _build(
    staging: Path,
    units: Sequence[SourceUnit],
    options: LoadOptions,
    backend: Backend,
    key: CacheKey,
    key_record: dict[str, Any],
    store: EntryStore,
) -> Manifest:
    # Imported here: only a cache miss needs the C++ reader, the generator and ninja.
    from .build.diagnostics import compile_error
    from .build.ninja import run_build
    from .build.preprocess import Preprocessor
    from .cache.deps import snapshot
    from .cache.objects import ObjectCache
    from .cache.trust import write_private
    from .codegen import render_binding, render_kernel_unit
    from .spec.resolve import resolve_functions

    specs = resolve_functions(
        options.functions,
        [(u.display_name, u.text) for u in units],
        preprocess=Preprocessor(staging, units, options, backend),
    )
    per_unit = _assign_functions(units, specs)
    file_names = _unit_file_names(units)
    (staging / "src").mkdir()
    kernel_units = []
    for unit, file_name, unit_specs in zip(units, file_names, per_unit, strict=True):
        (staging / "src" / file_name).write_text(render_kernel_unit(unit.display_name, unit.text, unit_specs))
        kernel_units.append((f"src/{file_name}", unit))
    (staging / "src" / "binding.cpp").write_text(
        render_binding(options.name, specs, platform=backend.platform)
    )
    library = f"lib{options.name}.so"
    steps = backend.compile_steps(options, kernel_units, "src/binding.cpp", library)
    objects = ObjectCache(store.module_dir / "objects")
    # An object depends on the toolchain and on our own headers and generated code, which
    # its dependency record does not list (they are keyed here instead).
    salted = sorted([*backend.key_inputs(options), "package", "binding_schema", "package_headers"])
    salt = json.dumps([[k, key_record.get(k)] for k in salted], default=str)
    object_keys = {s.output: objects.key(staging, s, salt) for s in steps if s.output.endswith(".o")}
    reused: dict[str, DependencyRecord] = {}
    for out, object_key in object_keys.items():
        cached = objects.fetch(object_key, staging / out)
        if cached is not None:
            reused[out] = cached
    todo = [step for step in steps if step.output not in reused]
    log.info(
        "compiling %s: %d translation unit(s) + binding [%s]%s",
        options.name,
        len(units),
        ", ".join(u.display_name for u in units),
        f"; {len(reused)} object(s) reused" if reused else "",
    )
    # What our include scan expects the compiler to read, as it is before the build: a
    # file unchanged since then was compiled as it is now (see cache/deps.py).
    # The previous entry's record (an edit-and-reload loop) adds what the scan cannot see.
    previous = Manifest.load(store.entry_dir(key))
    known = _scanned_headers(units, options) + list(previous.dependencies if previous else ())
    before = snapshot(known + [p for cached in reused.values() for p in cached])
    started_ns = time.time_ns()
    started = time.monotonic()
    try:
        build_log, _ = run_build(
            staging,
            todo,
            workers=options.ninja_workers,
            verbose=options.verbose,
            module=options.name,
        )
    except CompileError as exc:
        failed_log = store.failed_log_path(key)
        with contextlib.suppress(OSError):  # never written through a planted link (trust.py)
            write_private(failed_log, str(exc.data.get("log", "")).encode("utf-8", "replace"))
        raise compile_error(
            options.name,
            _user_file_names(str(exc.data.get("log", "")), kernel_units),
            failed_log,
            timed_out=bool(exc.data.get("timed_out")),
            timeout_s=exc.data.get("timeout_s"),
        ) from None
    dependencies = _record_objects(todo, object_keys, objects, staging, units, backend, before, started_ns)
    for cached in reused.values():
        dependencies.update(cached)
    if options.verbose:
        log.info("build log of %s:\n%s", options.name, build_log.rstrip())
    os.chmod(staging / library, 0o755)  # whatever the umask: loads refuse group/world-writable code
    # The file name carries the content's hash: a rebuild (a header changed) publishes a new
    # name, which dlopen loads afresh even in a process that still maps the old one.
    artifact_sha256 = sha256_file(staging / library)
    artifact = f"lib{options.name}.{artifact_sha256[:16]}.so"
    os.rename(staging / library, staging / artifact)
    elapsed = time.monotonic() - started
    log.info("compiled %s in %.2f s", options.name, elapsed)
    for out in object_keys:  # objects live on in the object cache, not in the entry
        (staging / out).unlink(missing_ok=True)
        (staging / f"{out}.d").unlink(missing_ok=True)
    (staging / "build.ninja").unlink(missing_ok=True)
    shutil.rmtree(staging / "nvcc-tmp", ignore_errors=True)
    for leftover in (".ninja_log", ".ninja_deps"):
        (staging / leftover).unlink(missing_ok=True)
    return Manifest(
        key=key.digest,
        name=options.name,
        platform=backend.platform,
        artifact=artifact,
        artifact_sha256=artifact_sha256,
        functions={s.name: _spec_to_json(s) for s in specs},
        inputs=key_record,
        created=time.time(),
        build_seconds=elapsed,
        dependencies=dict(sorted(dependencies.items())),
        dependencies_since_ns=started_ns,
    )


def _user_file_names(log_text: str, kernel_units: Sequence[tuple[str, SourceUnit]]) -> str:
    """Replaces the generated translation units' names (nvcc's closing line names them) with
    the user's file names."""
    for path, unit in kernel_units:
        log_text = log_text.replace(path, unit.display_name)
    return log_text


def _record_objects(
    todo: Sequence[BuildStep],
    object_keys: Mapping[str, str],
    objects: Any,
    staging: Path,
    units: Sequence[SourceUnit],
    backend: Backend,
    before: Mapping[str, tuple[int, int]],
    started_ns: int,
) -> dict[str, list[Any]]:
    """Publishes each freshly compiled object with the files its compiler read; returns them all."""
    from .build.depfile import read_depfile
    from .cache.deps import record as record_dependencies

    covered = backend.covered_dirs()
    # The sources themselves (named by #line, so the compiler lists them) are in the key.
    keyed = {os.path.normpath(u.display_name) for u in units if u.directory is not None}
    dependencies: dict[str, list[Any]] = {}
    for step in todo:
        if step.output not in object_keys:
            continue  # the link
        deps: DependencyRecord = {}
        if step.depfile is not None:  # the binding reads only our and XLA's headers
            read = [
                p
                for p in read_depfile(staging / step.depfile, staging)
                if not _inside(p, staging) and p not in keyed
            ]
            deps = record_dependencies(read, before=before, started_ns=started_ns, skip_dirs=covered)
        objects.publish(object_keys[step.output], staging / step.output, deps, started_ns)
        dependencies.update(deps)
    return dependencies


def _scanned_headers(units: Sequence[SourceUnit], options: LoadOptions) -> list[str]:
    """The headers our own #include scan finds: a guess, used only to tell on a miss which
    files the compiler may be reading; the compiler's dependency output is the truth."""
    from .build.includes import header_closure

    search = [Path(p) for p in options.extra_include_paths]
    search += [u.directory for u in units if u.directory is not None]
    found = header_closure([(u.text, u.directory) for u in units], search, skip_dirs=[INCLUDE_DIR])
    return list(found)


def _inside(path: str, directory: Path) -> bool:
    return path.startswith(str(directory) + os.sep)


def load_module(units: Sequence[SourceUnit], options: LoadOptions, backend: Backend) -> CompiledModule:
    check_options(options)
    with to_stderr(log, logging.DEBUG, options.verbose):
        # Headers are not in the key: each entry lists the files its compiler read, and a
        # hit re-checks them (cache/deps.py), whatever flags or macros chose them.
        record: dict[str, Any] = {
            "package": __version__,
            "binding_schema": BINDING_SCHEMA,
            "package_headers": _package_headers_digest(),
            "name": options.name,
            "functions": _functions_key(options.functions),
            "optimization_level": options.optimization_level,
            "use_fast_math": options.use_fast_math,
            "extra_cflags": list(options.extra_cflags),
            "extra_ldflags": list(options.extra_ldflags),
            "extra_include_paths": list(options.extra_include_paths),
        }
        units_key = _unit_key(units)
        if not options.force_rebuild:  # a module prebuilt into the user's package comes first
            bundled = bundle.lookup(units, record, backend.platform, backend.portable_inputs(options))
            if bundled is not None:
                return _load_entry(bundled, options, backend)
        # The key without the toolchain's identity: it finds an ahead-of-time build on a
        # machine that has no compiler (a production node), through an alias file.
        portable = (
            KeyBuilder(backend.platform + "-portable")
            .add("record", dict(record, **backend.portable_inputs(options)))
            .add("units", units_key)
            .finish()
        )
        store = EntryStore(cache_root(options.build_directory), options.name)
        try:
            toolchain = backend.key_inputs(options)
        except ToolchainError as exc:
            prebuilt, why_not = store.lookup_alias(portable)
            if prebuilt is None:
                found = (
                    f"The ahead-of-time build of module {options.name!r} under {store.module_dir} cannot "
                    f"be used: {why_not}. Rebuild it where a compiler is installed (`brainevent build`)."
                    if why_not
                    else f"No ahead-of-time build of module {options.name!r} with these sources and "
                    f"options was found under {store.module_dir} either (see `brainevent build`)."
                )
                raise ToolchainError(f"{exc.message}\n{found}", **exc.data) from None
            log.debug("no toolchain; loading the ahead-of-time build at %s", prebuilt.directory)
            return _load_entry(prebuilt, options, backend)
        record.update(toolchain)
        key = KeyBuilder(backend.platform).add("record", record).add("units", units_key).finish()
        # In a jax.distributed job, one process builds for all (distributed/exchange.py).
        entry: CacheEntry = distributed.get_or_build(
            store,
            key,
            lambda staging: _build(staging, units, options, backend, key, record, store),
            force=options.force_rebuild,
        )
        if entry.built_now:
            store.write_alias(portable, key)
        else:
            log.debug("cache hit for %s at %s", options.name, entry.directory)
        return _load_entry(entry, options, backend)


def _load_entry(entry: CacheEntry, options: LoadOptions, backend: Backend) -> CompiledModule:
    functions = {name: _spec_from_json(name, data) for name, data in entry.manifest.functions.items()}
    prefix = options.target_prefix or options.name
    targets = {name: f"{prefix}.{name}" for name in functions}
    registered = False
    reason: str | None = None
    if options.auto_register:
        reason = backend.can_register()
        if reason is None:
            try:
                library = ctypes.CDLL(str(entry.artifact), mode=ctypes.RTLD_LOCAL)
            except OSError as exc:
                raise LoadError(
                    f"cannot load {entry.artifact}: {exc}. Rebuild it with force_rebuild=True; if "
                    "that fails too, the toolchain produced a library this process cannot load.",
                    path=str(entry.artifact),
                ) from exc
            register_targets(
                targets,
                library,
                module=options.name,
                platform=backend.jax_platform,
                artifact_key=entry.manifest.artifact_sha256,  # a rebuild under one key is new code
                command_buffer=options.allow_cuda_graph,
                replace=options.replace,
            )
            registered = True
        else:
            log.warning("module %s was built but not registered: %s", options.name, reason)
    return CompiledModule(
        name=options.name,
        path=entry.artifact,
        platform=backend.platform,
        functions=functions,
        targets=targets,
        registered=registered,
        built_now=entry.built_now,
        cache_dir=entry.directory,
        unregistered_reason=reason,
    )
