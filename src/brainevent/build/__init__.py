"""Build execution: the ninja graph, compiler runs, diagnostics, include scanning (a cache hit
imports no submodule, only this constant)."""

# Commands (and the object cache keys made from them) name the build directory by this token.
BUILD_DIR = "@BUILD_DIR@"
