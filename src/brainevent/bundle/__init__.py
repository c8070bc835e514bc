"""Prebuilt modules shipped inside a user's own package.

``brainevent build --into <package dir>`` compiles every kernel file of a package and
writes each module's library and manifest next to its sources, in
``_brainevent/<module>-<platform>/``; a wheel carries them as package data. At run time
``load_cpp_file`` / ``load_cuda_file`` / ``load_cuda_dir`` look there first
(:func:`lookup`): an intact bundle built from the same sources and options is loaded
without a compiler or a cache.
"""

from __future__ import annotations

from .layout import BUNDLE_DIR, bundle_key, lookup

__all__ = ["BUNDLE_DIR", "bundle_key", "lookup"]
