"""Entry-point specs: which C++ functions to expose and how each parameter maps to JAX.

:func:`resolve_functions` is what the rest of the library calls; the other names
are exported for tools and tests. They load on first use: a cache hit needs only
:mod:`brainevent.spec.model`, and the C++ reader is not cheap to import.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "Annotation": "annotations",
    "discover_annotations": "annotations",
    "Comment": "cxx_lexer",
    "LexResult": "cxx_lexer",
    "Token": "cxx_lexer",
    "lex": "cxx_lexer",
    "TypeClass": "cxx_types",
    "infer_spec": "infer",
    "SCALAR_TYPES": "model",
    "FunctionSpec": "model",
    "Param": "model",
    "Role": "model",
    "resolve_functions": "resolve",
    "CxxParam": "signature",
    "CxxSignature": "signature",
    "classify": "signature",
    "find_signature": "signature",
    "scan_functions": "signature",
    "SpecToken": "tokens",
    "parse_tokens": "tokens",
}


def __getattr__(name: str) -> Any:
    from ..lazy_exports import load_export

    return load_export(__name__, _EXPORTS, globals(), name)


__all__ = sorted(_EXPORTS)
