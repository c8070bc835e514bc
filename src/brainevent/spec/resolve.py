"""Turn ``functions=`` ({name: arg_spec or None to infer it}, a list of names to infer, or None for
the ``// @BE`` annotations) and the C++ sources into checked FunctionSpecs.

A function the plain reading cannot find (or whose parameter types it cannot map, e.g. a
type spelled through a macro) is looked up again after macro expansion (``preprocess``):
functions written through a macro (``#define GEN(S, T) void gen##S(...)`` then ``GEN(_f32, float)``)
exist only in the compiler's ``-E`` output. Each is reported at the line of the user's file it
came from (for a generated function, the macro's use), found through the line markers.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any

from brainevent.errors import BrainEventError, SpecError
from brainevent.spec.bind import bind_tokens, infer_spec
from brainevent.spec.cxx_lexer import LexResult, lex
from brainevent.spec.cxx_types import classify
from brainevent.spec.declarations import parse_spec
from brainevent.spec.model import FunctionSpec, Role
from brainevent.spec.names import CXX_KEYWORDS, did_you_mean, is_c_identifier
from brainevent.spec.signature import CxxSignature, clash_error, pick_one, scan_functions
from brainevent.spec.tokens import Annotation, SpecToken, discover_annotations

Functions = Mapping[str, Sequence[str] | str | None] | Sequence[str] | None
_ACCEPTED_FUNCTIONS = (
    "a dict {name: [tokens...]}, a list/tuple of function names (specs inferred), "
    "or None (use '// @BE name [tokens...]' annotations)"
)
# Preprocessed text of a source, by its file name; BrainEventError when the preprocessor fails.
Preprocess = Callable[[str], str]
# One reading of the sources: each source's namespace-scope functions, and why reading failed.
_Reading = tuple[list[list[CxxSignature]], str]
# One requested function: its name, its tokens (None: infer them), where the spec was given,
# and its declarations (vmap_method=, num_batch_dims=).
_Request = tuple[str, list[SpecToken] | None, str, dict[str, Any]]


def resolve_functions(
    functions: Functions, sources: Sequence[tuple[str, str]], preprocess: Preprocess | None = None
) -> list[FunctionSpec]:
    """Checked specs for the requested entry points, in request order."""
    checked = _check_sources(sources)
    files = [name for name, _ in checked]
    lexed = [lex(text) for _, text in checked]
    plain: _Reading = ([scan_functions(lx, f) for lx, f in zip(lexed, files, strict=True)], "")
    expanded = None if preprocess is None else cache(lambda: _expand(preprocess, files))
    specs: list[FunctionSpec] = []
    for name, given, origin, options in _requests(functions, files, lexed):
        sig = _locate_anywhere(name, files, plain, expanded)
        tokens = given if given is not None else infer_spec(sig)
        if not any(t.role is Role.RET for t in tokens):  # refused: XLA would drop the call
            spec = f"the arg_spec from {origin}" if origin else "the spec inferred from its signature"
            shown = [t.shown() for t in tokens]
            message = (
                f"{name} ({sig.where}): {spec}, {shown}, has no output: an entry point needs at "
                "least one 'ret'. XLA drops a custom call whose results are unused, so this function "
                "would never run. Fix: give it a BE::Tensor output parameter (non-const) and a 'ret' "
                "token for it, and write the result (or a status) there."
            )
            raise SpecError(message, function=name, line=sig.line, file=sig.file_name, tokens=shown)
        params = bind_tokens(sig, tokens, origin)
        specs.append(FunctionSpec(name, params, sig.file_name, sig.line, sig.scope, **options))
    return specs


def _check_sources(sources: object) -> list[tuple[str, str]]:
    if isinstance(sources, str | bytes) or not isinstance(sources, Sequence):
        kind = type(sources).__name__
        raise SpecError(f"sources must be a list of (file_name, text) pairs, got {kind}.", sources_type=kind)
    for k, item in enumerate(sources):
        if not (isinstance(item, tuple | list) and len(item) == 2 and all(isinstance(i, str) for i in item)):
            raise SpecError(
                f"sources[{k}] must be a (file_name, text) pair of strings, got {item!r:.80}.", index=k
            )
    if not sources:
        raise SpecError("No C++ sources were given; pass at least one (file_name, text) pair.")
    return [(name, text) for name, text in sources]


def _requests(functions: Functions, files: list[str], lexed: list[LexResult]) -> list[_Request]:
    requests: list[_Request]
    if functions is None:
        requests = _from_annotations(files, lexed)
    elif isinstance(functions, Mapping):
        requests = [_from_entry(name, tokens) for name, tokens in functions.items()]
    elif isinstance(functions, list | tuple):
        requests = [_from_entry(name, None) for name in functions]
        twice = next((n for k, n in enumerate(functions) if n in functions[:k]), None)
        if twice is not None:
            raise SpecError(f"functions lists {twice!r} twice; list each function once.", function=twice)
    else:
        raise SpecError(
            f"functions= must be {_ACCEPTED_FUNCTIONS}; got {type(functions).__name__} {functions!r:.80}.",
            functions_type=type(functions).__name__,
        )
    if not requests:
        raise SpecError(
            f"No functions to expose from {', '.join(files)}: pass functions= ({_ACCEPTED_FUNCTIONS}) "
            "or add a '// @BE <function> [tokens...]' comment above each entry point.",
            files=files,
        )
    return requests


def _from_entry(name: object, tokens: object) -> _Request:
    if not isinstance(name, str) or not is_c_identifier(name) or name in CXX_KEYWORDS:
        raise SpecError(
            f"Function name {name!r} is not a valid C identifier (a letter or '_' followed "
            "by letters, digits or '_', and not a C++ keyword). Use the C++ function's name "
            "exactly as declared.",
            function=name,
        )
    if tokens is None:
        return name, None, "", {}
    given, options = parse_spec(name, tokens)  # type: ignore[arg-type]
    return name, given if given or not options else None, "functions=", options


def _from_annotations(files: list[str], lexed: list[LexResult]) -> list[_Request]:
    requests: list[_Request] = []
    seen: dict[str, Annotation] = {}
    for file_name, lx in zip(files, lexed, strict=True):
        for ann in discover_annotations(lx, file_name, seen):
            tokens, options = parse_spec(ann.function, ann.tokens) if ann.tokens else ([], {})
            # Declarations alone (no parameter tokens): the spec is inferred.
            requests.append((ann.function, tokens or None, f"'@BE' at {ann.where}", options))
    return requests


def _locate_anywhere(
    name: str, files: list[str], plain: _Reading, expanded: Callable[[], _Reading] | None
) -> CxxSignature:
    """The plain reading's signature, or the expanded one where that finds none or an unmappable type."""
    if expanded is None:
        return _locate(name, files, plain)
    try:
        found: CxxSignature | None = _locate(name, files, plain)
    except SpecError:
        found = None
    if found is not None and all(classify(p).kind != "unmappable" for p in found.params):
        return found
    reading = expanded()
    try:
        return _locate(name, files, reading)
    except SpecError as exc:
        if found is not None:
            return found  # the plain reading's complaint is about the user's own text
        if reading[1]:
            note = f" Reading the sources after macro expansion failed too: {reading[1]}"
            raise SpecError(exc.message + note, **exc.data) from None
        raise


def _locate(name: str, files: list[str], reading: _Reading) -> CxxSignature:
    """The single host definition of ``name`` across all sources."""
    per_file = [found for found in (pick_one(name, sigs) for sigs in reading[0]) if found is not None]
    if len(per_file) > 1 and sum(s.is_definition for s in per_file) != 1:
        problem = "found in several sources ({}). Define each entry point in exactly one source."
        raise clash_error(name, per_file, problem)
    found = pick_one(name, per_file)  # declarations elsewhere must agree with the one definition
    if found is not None:
        return found
    device = [s for sigs in reading[0] for s in sigs if s.name == name]
    if device:
        kind = "__global__ kernel" if device[0].kind == "kernel" else "__device__ function"
        raise SpecError(
            f"{name}: at {device[0].where} it is a {kind}, which the host cannot call "
            "through XLA. Fix: expose a host function that takes BE::Tensor parameters "
            "and launches the kernel.",
            function=name,
            files=files,
            line=device[0].line,
        )
    hint = did_you_mean(name, {s.name for sigs in reading[0] for s in sigs if s.kind == "host"})
    raise SpecError(
        f"{name}: no function with this name is defined at namespace scope in {', '.join(files)}."
        + (hint or " Check the spelling, and that the function is not inside a class."),
        function=name,
        files=files,
    )


def _expand(preprocess: Preprocess, files: list[str]) -> _Reading:
    failure = ""
    found: list[list[CxxSignature]] = []
    for file_name in files:
        try:
            text = preprocess(file_name)
        except BrainEventError as exc:
            failure = failure or exc.message
            text = ""
        found.append(expanded_functions(text, file_name) if text else [])
    return found, failure


def expanded_functions(preprocessed: str, file_name: str) -> list[CxxSignature]:
    """The namespace-scope functions of ``file_name`` in its preprocessed text (not its headers')."""
    kept: list[str] = []
    origin = [0]  # origin[k]: kept line k's number in file_name (0: not from it)
    current, line = "", 0
    for text in preprocessed.split("\n"):
        marker = _MARKER.match(text)
        if marker is not None and marker.group(2) is not None:
            # C's escapes in the file name (\\, \" and octal) are Python's bytes escapes too.
            current = codecs.escape_decode(marker.group(2).encode(), "ignore")[0].decode("utf-8", "replace")
        line = line + 1 if marker is None else int(marker.group(1))  # now the next line's number
        ours = marker is None and current == file_name
        kept.append(text if ours else "")
        origin.append(line - 1 if ours else 0)
    found = []
    for sig in scan_functions(lex("\n".join(kept)), file_name):
        params = tuple(p._replace(line=origin[p.line] or origin[sig.line]) for p in sig.params)
        found.append(sig._replace(line=origin[sig.line], params=params))
    return found


# ``# 12 "f" 2`` or ``#line 12 "f"``: the next line's number, then maybe its file (a C string).
_MARKER = re.compile(r'\s*#\s*(?:line)?\s*([0-9]+)\s*(?:"((?:[^"\\]|\\.)*))?')
