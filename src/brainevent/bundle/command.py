"""``brainevent build --into <package dir>``: prebuild a package's kernel files into it, each
module's library and manifest copied next to its sources."""

from __future__ import annotations

import argparse
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..cache.bundle import BUNDLE_DIR, HEADERS, PACKAGE_ROOT, bundle_key, bundle_path, source_dir
from ..cache.manifest import Manifest
from ..errors import CacheError
from ..fileio import copy_file, make_dir
from ..load_options import SourceUnit
from ..platform_table import BUILD_PLATFORMS, PLATFORM_OF_SUFFIX


def kernel_files(package: Path) -> list[Path]:
    """Every source file of a build platform (platform table) under ``package``, bundles and
    hidden directories aside."""
    return [
        path
        for path in sorted(package.rglob("*"))
        if path.is_file() and path.suffix in PLATFORM_OF_SUFFIX
        if not any(p == BUNDLE_DIR or p.startswith(".") for p in path.relative_to(package).parts)
    ]


def build_into(args: argparse.Namespace) -> int:
    from ..load_options import cli_keywords
    from ..loaders import FILE_LOADERS
    from ..stages.request import file_unit, name_from_path

    package = Path(args.into).resolve()
    if not package.is_dir():
        print(f"brainevent build --into {args.into}: not a directory", file=sys.stderr)
        return 2
    files = [Path(p).resolve() for p in args.paths] or kernel_files(package)
    outside = [str(f) for f in files if not f.is_relative_to(package)]
    if outside:
        print(f"brainevent build --into: {', '.join(outside)} not inside {package}", file=sys.stderr)
        return 2
    platforms = set(args.platform or BUILD_PLATFORMS)
    failures = 0
    # Two files of one directory whose stems map to one module name (``a-b.cpp`` and
    # ``a_b.cpp``) would share one bundle directory: the second would replace the first.
    owners: dict[tuple[Path, str], Path] = {}
    with tempfile.TemporaryDirectory(prefix="brainevent-bundle-") as scratch:
        common = {
            "build_directory": args.cache_dir or scratch,
            "auto_register": False,
            "force_rebuild": True,  # compile from the sources, never from an older bundle
            "verbose": args.verbose,
        }
        for file in files:
            platform = PLATFORM_OF_SUFFIX[file.suffix]
            if platform not in platforms:
                continue
            slot = (file.parent, f"{name_from_path(file)}-{platform}")
            try:
                if slot in owners:
                    raise ValueError(
                        f"its module name is that of {owners[slot].name} ({slot[1]}), and both would be "
                        "bundled in one directory; rename one of them."
                    )
                owners[slot] = file
                mod = FILE_LOADERS[platform](file, **common, **cli_keywords(args, platform))
                where = write_bundle([file_unit(file, (file.suffix,))], mod.cache_dir, package)
                print(f"bundled: {mod.name} ({mod.platform}) -> {where}")
            except Exception as exc:  # report every file, then fail
                failures += 1
                print(f"FAILED {file}: {exc}", file=sys.stderr)
    return 1 if failures else 0


def write_bundle(units: Sequence[SourceUnit], entry_dir: Path, package_dir: Path) -> Path:
    """Copies the cache entry at ``entry_dir`` (built from ``units``) next to the units; returns its
    path. Headers read from inside ``package_dir`` are recorded by content: an edited one makes the
    bundle unused (never silently stale)."""
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
    manifest = manifest._replace(
        key=bundle_key(units, manifest.inputs, manifest.platform).digest,  # of the inputs as built
        inputs={
            **manifest.inputs,
            HEADERS: dict(sorted(headers.items())),
            PACKAGE_ROOT: os.path.relpath(package, directory.resolve()),
        },
        # Recorded paths and times of the build machine mean nothing where the package runs.
        dependencies={},
        dependencies_since_ns=0,
        artifact_size=-1,  # every load checks the sha256
        artifact_mtime_ns=-1,
    )
    final = bundle_path(directory, manifest.name, manifest.platform)
    # Modes are set exactly, whatever the umask: a loader refuses a bundle any part of which
    # another user could write (cache/bundle.py), and others need only read it.
    make_dir(final.parent, mode=0o755, parents=True)
    os.chmod(final.parent, stat.S_IMODE(os.stat(final.parent).st_mode) & ~0o022 | 0o755)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))
    try:
        copy_file(entry_dir / manifest.artifact, staging / manifest.artifact, mode=0o755)
        manifest.dump(staging, mode=0o644)
        os.chmod(staging, 0o755)
        if final.exists():
            shutil.rmtree(final)
        os.rename(staging, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final
