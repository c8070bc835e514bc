"""Build execution: the ninja graph, compiler invocation, diagnostics, include scanning.

Submodules are imported where needed: a cache hit imports none of them, only this
package's constants (platforms/languages.py builds its flags from them).
"""

# Commands name the build directory through this token, so that they (and the object
# cache keys made from them) do not depend on where a build happens to run.
BUILD_DIR = "@BUILD_DIR@"
