"""Entry-point specs: which C++ functions to expose and how each parameter maps to JAX.

:func:`resolve_functions` is what the rest of the library calls; the other names
are exported for tools and tests. They load on first use: a cache hit needs only
:mod:`brainevent.spec.model`, and the C++ reader is not cheap to import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .annotations import Annotation as Annotation
    from .annotations import discover_annotations as discover_annotations
    from .cxx_lexer import Comment as Comment
    from .cxx_lexer import LexResult as LexResult
    from .cxx_lexer import Token as Token
    from .cxx_lexer import lex as lex
    from .cxx_types import TypeClass as TypeClass
    from .infer import infer_spec as infer_spec
    from .model import SCALAR_TYPES as SCALAR_TYPES
    from .model import FunctionSpec as FunctionSpec
    from .model import Param as Param
    from .model import Role as Role
    from .resolve import resolve_functions as resolve_functions
    from .signature import CxxParam as CxxParam
    from .signature import CxxSignature as CxxSignature
    from .signature import classify as classify
    from .signature import find_signature as find_signature
    from .signature import scan_functions as scan_functions
    from .tokens import SpecToken as SpecToken
    from .tokens import parse_tokens as parse_tokens

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


if not TYPE_CHECKING:  # hidden from type checkers, so that a misspelt name is an error there

    def __getattr__(name: str) -> Any:
        from ..lazy_exports import load_export

        return load_export(__name__, _EXPORTS, globals(), name)


__all__ = sorted(_EXPORTS)
