"""``brainevent build --into <package dir>``: prebuild a package's kernel files into it."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from ..platforms.devices import BUILD_PLATFORMS, PLATFORM_OF_SUFFIX
from .layout import BUNDLE_DIR


def kernel_files(package: Path) -> list[Path]:
    """Every .cu and C++ file under ``package``, bundles and hidden directories aside."""
    return [
        path
        for path in sorted(package.rglob("*"))
        if path.is_file() and path.suffix in PLATFORM_OF_SUFFIX
        if not any(p == BUNDLE_DIR or p.startswith(".") for p in path.relative_to(package).parts)
    ]


def build_into(args: argparse.Namespace) -> int:
    from .. import cuda_loaders, loaders
    from ..load_options import cli_keywords
    from ..stages.request import file_unit, name_from_path
    from .write import write_bundle

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
                loader = cuda_loaders.load_cuda_file if platform == "cuda" else loaders.load_cpp_file
                mod = loader(file, **common, **cli_keywords(args, platform))
                where = write_bundle([file_unit(file, (file.suffix,))], mod.cache_dir, package)
            except Exception as exc:  # report every file, then fail
                failures += 1
                print(f"FAILED {file}: {exc}", file=sys.stderr)
                continue
            print(f"bundled: {mod.name} ({mod.platform}) -> {where}")
    return 1 if failures else 0
