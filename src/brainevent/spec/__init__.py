"""Entry-point specs: which C++ functions to expose and how each parameter maps to JAX.

:func:`resolve_functions` is what the rest of the library calls; the other names
are exported for tools and tests. They load on first use: a cache hit needs only
:mod:`brainevent.spec.model`, and the C++ reader is not cheap to import.
"""

from __future__ import annotations

from typing import Any

# Module -> the names it exports here.
_BY_MODULE = {
    "bind": "infer_spec",
    "cxx_lexer": "Comment LexResult Token lex",
    "cxx_types": "CxxParam TypeClass classify",
    "model": "SCALAR_TYPES FunctionSpec Param Role",
    "resolve": "resolve_functions",
    "signature": "CxxSignature find_signature scan_functions",
    "tokens": "Annotation SpecToken discover_annotations parse_tokens",
}
_EXPORTS = {name: module for module, names in _BY_MODULE.items() for name in names.split()}


def __getattr__(name: str) -> Any:
    from .. import _load_export

    return _load_export(__name__, _EXPORTS, globals(), name)


__all__ = sorted(_EXPORTS)
