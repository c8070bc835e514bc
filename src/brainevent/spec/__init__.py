"""Entry-point specs: which C++ functions to expose and how each parameter maps to JAX.

:func:`resolve_functions` is what the rest of the library calls; the other names
are exported for tools and tests.
"""

from brainevent.spec.annotations import Annotation, discover_annotations
from brainevent.spec.cxx_lexer import Comment, LexResult, Token, lex
from brainevent.spec.cxx_types import TypeClass
from brainevent.spec.infer import infer_spec
from brainevent.spec.model import SCALAR_TYPES, FunctionSpec, Param, Role
from brainevent.spec.resolve import resolve_functions
from brainevent.spec.signature import (
    CxxParam,
    CxxSignature,
    classify,
    find_signature,
    scan_functions,
)
from brainevent.spec.tokens import SpecToken, parse_tokens

__all__ = [
    "SCALAR_TYPES",
    "Annotation",
    "Comment",
    "CxxParam",
    "CxxSignature",
    "FunctionSpec",
    "LexResult",
    "Param",
    "Role",
    "SpecToken",
    "Token",
    "TypeClass",
    "classify",
    "discover_annotations",
    "find_signature",
    "infer_spec",
    "lex",
    "parse_tokens",
    "resolve_functions",
    "scan_functions",
]
