"""Writing a bundle: a built module's library and manifest, copied into the package."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..cache.manifest import MANIFEST_NAME, Manifest
from ..errors import CacheError
from ..load_options import SourceUnit
from .layout import HEADERS, PACKAGE_ROOT, bundle_key, bundle_path, source_dir


def write_bundle(units: Sequence[SourceUnit], entry_dir: Path, package_dir: Path) -> Path:
    """Copies the cache entry at ``entry_dir`` (built from ``units``) next to the units.

    Headers the build read from inside ``package_dir`` are recorded by content, so an
    edited header makes the bundle unused (never silently stale). Returns the bundle's path.
    """
    directory = source_dir(units)
    manifest = Manifest.load(entry_dir)
    if directory is None or manifest is None:
        raise CacheError(f"no intact build of these sources at {entry_dir}", path=str(entry_dir))
    package = package_dir.resolve()
    inside = {p: r for p, r in manifest.dependencies.items() if Path(p).resolve().is_relative_to(package)}
    unverified = sorted(path for path, record in inside.items() if record[2] is None)
    if unverified:
        # Dropping it from the record would let the bundle be used whatever it says later.
        raise CacheError(
            f"{', '.join(unverified)} changed while the module was being built, so the bundle cannot "
            "record which contents it was built from; nothing was written. Run `brainevent build "
            "--into` again once the files stop changing.",
            path=unverified[0],
        )
    headers = {os.path.relpath(path, directory): record[2] for path, record in inside.items()}
    manifest.key = bundle_key(units, manifest.inputs, manifest.platform).digest  # before inputs change
    manifest.inputs = {
        **manifest.inputs,
        HEADERS: dict(sorted(headers.items())),
        PACKAGE_ROOT: os.path.relpath(package, directory.resolve()),
    }
    # Recorded paths and times of the build machine mean nothing where the package runs.
    manifest.dependencies, manifest.dependencies_since_ns = {}, 0
    manifest.artifact_size = manifest.artifact_mtime_ns = -1  # every load checks the sha256
    final = bundle_path(directory, manifest.name, manifest.platform)
    # Modes are set exactly, whatever the umask: a loader refuses a bundle any part of which
    # another user could write (bundle/trust.py), and others need only read it.
    final.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(final.parent, stat.S_IMODE(os.stat(final.parent).st_mode) & ~0o022 | 0o755)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))
    try:
        shutil.copyfile(entry_dir / manifest.artifact, staging / manifest.artifact)
        os.chmod(staging / manifest.artifact, 0o755)
        manifest.dump(staging)
        os.chmod(staging / MANIFEST_NAME, 0o644)
        os.chmod(staging, 0o755)
        if final.exists():
            shutil.rmtree(final)
        os.rename(staging, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final
