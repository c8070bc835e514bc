"""Where a bundled module lives, what keys it, and the check made before loading it.

The key leaves out what differs between the machine that built the package and the one
that runs it: the toolchain (absent at run time), the sources' absolute paths (only paths
relative to their directory count), and the include paths (absolute where the package
computes them from ``__file__``). Headers inside the package are checked by content instead.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..cache.key import CacheKey, KeyBuilder
from ..cache.manifest import Manifest
from ..cache.store import CacheEntry
from ..fileio import HEADER_LIMIT, sha256_plain_file
from ..load_options import BUNDLE_KEYED, SourceUnit

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
    from .trust import check_bundle

    check_bundle(directory, path)
    manifest = Manifest.load(path)
    if manifest is None:
        log.info("bundled module %s at %s has no readable manifest; not used", name, path)
        return None
    key = bundle_key(units, record, platform)
    why = (
        "it was built from other sources, options or brainevent version"
        if manifest.key != key.digest
        else _unusable(path, manifest, needs)
    )
    if why is not None:
        log.info("bundled module %s at %s is not used: %s", name, path, why)
        return None
    log.debug("loading the bundled module %s from %s", name, path)
    return CacheEntry(path, manifest, built_now=False)


def _unusable(path: Path, manifest: Manifest, needs: Mapping[str, Any]) -> str | None:
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
    from .trust import check_bundle_file

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
    regular files under the package root are read, each at most HEADER_LIMIT bytes: a record
    pointing elsewhere, at a FIFO or at a pseudo-file refuses the bundle instead of hanging the load."""
    above = inputs.get(PACKAGE_ROOT, ".")  # "." or "../..": nothing else
    if not isinstance(above, str) or any(part not in (".", "..") for part in above.split("/")):
        return f"its package root {above!r} is not a directory above its sources"
    root = os.path.normpath(os.path.join(directory, above))
    real_root = os.path.realpath(root)
    for relative, digest in dict(inputs.get(HEADERS) or {}).items():
        header = os.path.normpath(os.path.join(directory, relative))
        real = os.path.realpath(header)
        if os.path.isabs(relative) or not (_inside(header, root) and _inside(real, real_root)):
            return f"its header record {relative!r} points outside the package"
        try:
            same = sha256_plain_file(real, limit=HEADER_LIMIT) == digest
        except (OSError, ValueError):
            same = False
        if not same:
            return f"header {relative} changed since the bundle was built (or is not a plain file)"
    return None


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)
