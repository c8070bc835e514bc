"""Build execution: the ninja graph, compiler invocation, diagnostics, include scanning.

Submodules are imported where needed; a cache hit only uses :mod:`.includes`.
"""
