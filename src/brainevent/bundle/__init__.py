"""Prebuilt modules shipped inside a user's own package (``brainevent build --into``).

Each module's library and manifest sit next to its sources, in ``_brainevent/<module>-<platform>/``,
and a wheel carries them as package data. The file loaders look there first (cache/bundle.py
reads a bundle): an intact bundle built from the same sources and options loads without a
compiler or a cache. This package writes them (command.py).
"""
