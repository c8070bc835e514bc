"""Build plan -> a finished staging directory and its manifest (cache misses only).

Objects already in the object cache are reused; ninja runs the rest in parallel; each new
object is published to the object cache with the files its compiler read, and a decoder
this build compiled is published for every later build (stages/decoder.py).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cache.manifest import Manifest, sha256_file, spec_to_json
from ..errors import CompileError
from ..headers import INCLUDE_DIR
from ..load_options import variant_of
from .decoder import publish_decoder
from .module_key import ModuleKey
from .plan import BuildPlan
from .request import LoadRequest

if TYPE_CHECKING:
    from ..build.step import BuildStep
    from ..cache.objects import ObjectCache
    from ..cache.store import EntryStore

log = logging.getLogger("brainevent")
_OMP_PRAGMA = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+omp\b", re.MULTILINE)


def run_plan(
    plan: BuildPlan, staging: Path, request: LoadRequest, key: ModuleKey, store: EntryStore
) -> Manifest:
    from ..build.ninja import run_build
    from ..cache.deps import snapshot
    from ..cache.objects import ObjectCache
    from ..fileio import atomic_write

    options, platform = request.options, request.platform
    assert key.exact is not None
    objects = ObjectCache(store.module_dir / "objects")
    # An object depends on the toolchain and on our own headers and generated code, which
    # its dependency record does not list (they are keyed here instead).
    salted = sorted([*platform.key_inputs(options), "package", "binding_schema", "package_headers"])
    salt = json.dumps([[k, key.record.get(k)] for k in salted], default=str)
    object_keys = {  # the units' objects (our generated units have no depfile: never shared)
        s.output: objects.key(staging, s, salt) for s in plan.steps if s.output.endswith(".o") and s.depfile
    }
    fetched = {out: objects.fetch(object_key, staging / out) for out, object_key in object_keys.items()}
    reused = {out: deps for out, deps in fetched.items() if deps is not None}
    todo = [step for step in plan.steps if step.output not in reused]
    units = f"{len(request.units)} translation unit(s) [{', '.join(u.display_name for u in request.units)}]"
    reuse = f"; {len(reused)} object(s) reused" if reused else ""
    decoder = "" if plan.decoder.fetched else "; and the shared FFI decoder, once for this toolchain"
    log.info("compiling %s: %s%s%s", options.name, units, reuse, decoder)
    if not options.openmp and any(_OMP_PRAGMA.search(u.text) for u in request.units):  # once: at the build
        log.warning(
            "module %s has `#pragma omp` lines but is built without OpenMP: they run serially. "
            "Pass openmp=True to the loader (`brainevent build --openmp`) to run them in parallel.",
            options.name,
        )
    # What our include scan expects the compiler to read, as it is before the build: a
    # file unchanged since then was compiled as it is now (see cache/deps.py).
    # The previous entry's record (an edit-and-reload loop) adds what the scan cannot see.
    previous = Manifest.load(store.entry_dir(key.exact))
    known = _scanned_headers(request) + list(previous.dependencies if previous else ())
    before = snapshot(known + [p for cached in reused.values() for p in cached])
    started_ns, started = time.time_ns(), time.monotonic()  # when the build began; for its duration
    try:
        run_build(staging, todo, workers=options.ninja_workers, verbose=options.verbose, module=options.name)
    except CompileError as exc:
        from ..build.diagnostics import compile_error, user_file_names  # its regexes: a failed build only

        failed_log, text = store.failed_log_path(key.exact), str(exc.data.get("log", ""))
        with contextlib.suppress(OSError):  # never written through a planted link (atomic_write)
            atomic_write(failed_log, text.encode("utf-8", "replace"))
        shown = user_file_names(text, [(p, u.display_name) for p, u in plan.sources.kernel_units])
        timing: dict[str, Any] = {
            "timed_out": bool(exc.data.get("timed_out")),
            "timeout_s": exc.data.get("timeout_s"),
        }
        raise compile_error(options.name, shown, failed_log, **timing, sources=request.units) from None
    publish_decoder(staging, plan.decoder, started_ns, tuple(todo))
    dependencies = _record_objects(todo, object_keys, objects, staging, request, before, started_ns)
    for cached in reused.values():
        dependencies.update(cached)
    # Named after its content: a rebuild (a header changed) publishes a new name, which dlopen
    # loads afresh even in a process that still maps the old one.
    library = staging / plan.sources.library
    os.chmod(library, 0o755)  # whatever the umask: loads refuse group/world-writable code
    artifact_sha256 = sha256_file(library)
    artifact = f"lib{options.name}.{artifact_sha256[:16]}.so"
    os.rename(library, staging / artifact)
    elapsed = time.monotonic() - started
    log.info("compiled %s in %.2f s", options.name, elapsed)
    objects_made = {s.output for s in plan.steps if s.output.endswith(".o")} | {plan.sources.decoder}
    _remove_intermediates(staging, sorted(objects_made), platform.scratch_dirs)
    return Manifest(
        key=key.exact.digest,
        name=options.name,
        platform=platform.name,
        artifact=artifact,
        artifact_sha256=artifact_sha256,
        functions={s.name: spec_to_json(s) for s in plan.specs},
        inputs=dict(key.record),
        created=time.time(),
        build_seconds=elapsed,
        dependencies=dict(sorted(dependencies.items())),
        dependencies_since_ns=started_ns,
        variant=variant_of(key.record),
    )


def _remove_intermediates(staging: Path, objects: Sequence[str], scratch: Sequence[str]) -> None:
    # Objects live on in the object caches, not in the entry; k0.d: a unit compiled and linked in one call.
    for name in [*objects, *(f"{o}.d" for o in objects), "k0.d", "build.ninja", ".ninja_log", ".ninja_deps"]:
        (staging / name).unlink(missing_ok=True)
    for directory in scratch:
        shutil.rmtree(staging / directory, ignore_errors=True)


def _record_objects(
    todo: Sequence[BuildStep],
    object_keys: Mapping[str, str],
    objects: ObjectCache,
    staging: Path,
    request: LoadRequest,
    before: Mapping[str, tuple[int, int, int, int]],
    started_ns: int,
) -> dict[str, list[Any]]:
    """Publishes each freshly compiled object with the files its compiler read; returns them all."""
    from ..build.includes import read_depfile
    from ..cache.deps import record as record_dependencies

    covered = request.platform.covered_dirs()
    # The sources themselves (named by #line, so the compiler lists them) are in the key.
    keyed = {os.path.normpath(u.display_name) for u in request.units if u.directory is not None}
    dependencies: dict[str, list[Any]] = {}
    for step in todo:
        if step.depfile is None:
            continue  # a link, or the decoder (which reads only keyed headers)
        read = read_depfile(staging / step.depfile, staging)
        read = [p for p in read if not p.startswith(f"{staging}{os.sep}") and p not in keyed]
        deps = record_dependencies(read, before=before, started_ns=started_ns, skip_dirs=covered)
        if step.output in object_keys:  # not a unit compiled and linked in one call
            objects.publish(object_keys[step.output], staging / step.output, deps, started_ns)
        dependencies.update(deps)
    return dependencies


def _scanned_headers(request: LoadRequest) -> list[str]:
    """The headers our own #include scan finds: a guess, used only to tell on a miss which
    files the compiler may be reading; the compiler's dependency output is the truth."""
    from ..build.includes import header_texts

    units = request.units
    search = [Path(p) for p in request.options.extra_include_paths]
    search += [u.directory for u in units if u.directory is not None]
    return list(header_texts([(u.text, u.directory) for u in units], search, skip_dirs=[INCLUDE_DIR]))
