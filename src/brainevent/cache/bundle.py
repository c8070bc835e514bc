"""Where a bundled module lives, what keys it, and the check made before loading it.

The key leaves out what differs between the machine that built the package and the one that
runs it (the toolchain, absolute paths); headers inside the package are checked by content. A
bundle meets the cache's trust rule, trusting root, this user and the sources' owner
(docs/caching.md, "Bundles").
"""

from __future__ import annotations

import logging
import os
import stat
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import CacheError
from ..load_options import BUNDLE_KEYED, SourceUnit
from . import MANIFEST_NAME
from .deps import sha256_or_none
from .key import CacheKey, KeyBuilder
from .manifest import Manifest
from .store import CacheEntry

log = logging.getLogger("brainevent.bundle")

BUNDLE_DIR = "_brainevent"  # not hidden: packaging tools include it like any package data
# The load record's entries that key a bundle (the rest name the toolchain or local paths).
KEYED = ("package", "binding_schema", "package_headers", "functions", *BUNDLE_KEYED)
HEADERS = "bundle_headers"  # manifest.inputs entry: {path relative to the sources: sha256}
PACKAGE_ROOT = "bundle_package_root"  # manifest.inputs entry: the package, relative to the sources


def source_dir(units: Sequence[SourceUnit]) -> Path | None:
    """The directory that holds the bundle: the units' own; None for inline sources."""
    directories = {u.directory for u in units}
    return next(iter(directories)) if len(directories) == 1 else None


def bundle_path(directory: Path, name: str, platform: str) -> Path:
    return directory / BUNDLE_DIR / f"{name}-{platform}"


def bundle_key(units: Sequence[SourceUnit], record: Mapping[str, Any], platform: str) -> CacheKey:
    directory = source_dir(units)
    assert directory is not None
    files = [[os.path.relpath(u.display_name, directory), u.suffix, u.text] for u in units]
    keyed = {k: record.get(k) for k in KEYED}
    return KeyBuilder(f"bundle-{platform}").add("record", keyed).add("units", files).finish()


def lookup(
    units: Sequence[SourceUnit], record: Mapping[str, Any], platform: str, needs: Mapping[str, Any]
) -> CacheEntry | None:
    """The bundled entry for these sources, if the package ships one that fits and verifies.

    ``record`` is the load's key record without the toolchain; ``needs`` what the platform
    requires of a build beyond it (``{"archs": [...]}`` for CUDA): a list must be covered by
    the bundle's, anything else equal. Costs one ``stat`` when there is no bundle.
    """
    directory = source_dir(units)
    if directory is None:
        return None
    name = str(record.get("name"))
    path = bundle_path(directory, name, platform)
    if not path.is_dir():
        return None
    check_bundle(directory, path)
    manifest = Manifest.load(path)
    key = bundle_key(units, record, platform).digest
    why = "it has no readable manifest" if manifest is None else _unusable(path, manifest, key, needs)
    if manifest is None or why is not None:
        log.info("bundled module %s at %s is not used: %s", name, path, why)
        return None
    log.debug("loading the bundled module %s from %s", name, path)
    return CacheEntry(path, manifest, built_now=False)


def _unusable(path: Path, manifest: Manifest, key: str, needs: Mapping[str, Any]) -> str | None:
    if manifest.key != key:
        return "it was built from other sources, options or brainevent version"
    for what, wanted in needs.items():
        has = manifest.inputs.get(what)
        if isinstance(wanted, list):
            missing = sorted(set(wanted) - set(has if isinstance(has, list) else []))
            if missing:
                return f"it has no {what} {', '.join(map(str, missing))} (it has {has})"
        elif has != wanted:
            return f"it was built for {what}={has!r}, this process needs {wanted!r}"
    artifact = path / manifest.artifact
    if "/" in manifest.artifact or not artifact.is_file():
        return "its library is missing"
    check_bundle_file(path.parent.parent, artifact)
    # A wheel built on x86-64 installed on an aarch64 node, say: the library is loaded into
    # this interpreter, so the interpreter's ELF header is the reference.
    here, there = _elf_machine(os.path.realpath(sys.executable)), _elf_machine(artifact)
    if here is not None and there != here:  # not an ELF platform: the loader will say
        return f"its library was built for another machine (ELF {there}, this interpreter is {here})"
    # Sizes unrecorded: always the sha256.
    return manifest.verify(path, manifest.key) or _headers_changed(path.parent.parent, manifest.inputs)


def _elf_machine(path: str | Path) -> tuple[bytes, int] | None:
    """(class and byte order, e_machine) from an ELF header; None for anything else."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(20)
    except OSError:
        return None
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    return head[4:6], int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")


def _headers_changed(directory: Path, inputs: Mapping[str, Any]) -> str | None:
    """None when every header the bundle records (by content) is unchanged, else why not. Only
    regular files under the package root are read, each at most HEADER_LIMIT bytes (cache/deps.py):
    a record pointing elsewhere, at a FIFO or at a pseudo-file refuses the bundle instead of hanging."""
    above = inputs.get(PACKAGE_ROOT, ".")  # "." or "../..": nothing else
    if not isinstance(above, str) or any(part not in (".", "..") for part in above.split("/")):
        return f"its package root {above!r} is not a directory above its sources"
    root = Path(os.path.normpath(os.path.join(directory, above)))
    real_root = root.resolve()
    for relative, digest in dict(inputs.get(HEADERS) or {}).items():
        header = Path(os.path.normpath(os.path.join(directory, relative)))
        real = header.resolve()
        if os.path.isabs(relative) or not (header.is_relative_to(root) and real.is_relative_to(real_root)):
            return f"its header record {relative!r} points outside the package"
        if sha256_or_none(str(real)) != digest:
            return f"header {relative} changed since the bundle was built (or is not a plain file)"
    return None


def _refuse(path: Path, why: str) -> CacheError:
    return CacheError(
        f"refusing to load the bundled module at {path}: it {why}. If you built it, run `chmod go-w "
        f"{path}` (or build it again with `brainevent build --into`, which writes safe modes); otherwise "
        "remove the package's _brainevent directory, and the module is compiled from its sources.",
        path=str(path),
    )


def _owners(directory: Path) -> set[int]:
    return {0, os.getuid(), os.stat(directory).st_uid}


def _check(path: Path, st: os.stat_result, owners: set[int], *, allow_sticky: bool) -> None:
    if st.st_uid not in owners:
        raise _refuse(path, f"is owned by uid {st.st_uid}, neither you, root, nor the owner of the sources")
    open_to_others = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if open_to_others and not (allow_sticky and st.st_mode & stat.S_ISVTX):
        raise _refuse(path, f"is writable by other users (mode {stat.S_IMODE(st.st_mode):o})")


def check_bundle(directory: Path, bundle: Path) -> None:
    """The directories from ``/`` to ``bundle`` (a directory under ``directory``/_brainevent)
    and its manifest; raises CacheError on anything another user could have written."""
    owners = _owners(directory)
    real = Path(os.path.realpath(directory))
    for parent in [*reversed(real.parents), real]:
        _check(parent, os.stat(parent), owners, allow_sticky=True)
    for inner in (directory / bundle.parent.name, bundle):
        st = os.lstat(inner)
        if not stat.S_ISDIR(st.st_mode):
            raise _refuse(inner, "is not a directory (a symbolic link?)")
        _check(inner, st, owners, allow_sticky=False)
    check_bundle_file(directory, bundle / MANIFEST_NAME)


def check_bundle_file(directory: Path, path: Path) -> None:
    """One file of a bundle: a regular file (not a link) nobody else could have written."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return  # absent: the caller reports the bundle as unusable
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, "is not a regular file (a symbolic link or a special file)")
    _check(path, st, _owners(directory), allow_sticky=False)
