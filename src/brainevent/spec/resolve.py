"""Turn the user's ``functions=`` argument and C++ sources into checked FunctionSpecs.

``functions`` may be:

* a dict ``{name: tokens}``: tokens a list/tuple of strings, one whitespace-separated
  string, or None to infer that function's spec from its C++ signature;
* a list/tuple of names: every spec inferred from its signature;
* None: the ``// @BE name [tokens...]`` annotations of all sources decide.

A function the plain reading cannot find (or whose parameter types it cannot map, e.g. a
type spelled through a macro) is looked up again after macro expansion (``preprocess``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from brainevent.errors import BrainEventError, SpecError
from brainevent.spec.annotations import Annotation, discover_annotations
from brainevent.spec.bind import bind_tokens, infer_spec
from brainevent.spec.cxx_lexer import LexResult, lex
from brainevent.spec.cxx_types import classify
from brainevent.spec.model import FunctionSpec, Role
from brainevent.spec.names import CXX_KEYWORDS, did_you_mean, is_c_identifier
from brainevent.spec.signature import CxxSignature, clash_error, pick_one, scan_functions
from brainevent.spec.tokens import SpecToken, parse_tokens

Functions = Mapping[str, Sequence[str] | str | None] | Sequence[str] | None
_ACCEPTED_FUNCTIONS = (
    "a dict {name: [tokens...]}, a list/tuple of function names (specs inferred), "
    "or None (use '// @BE name [tokens...]' annotations)"
)


@dataclass(frozen=True)
class _Request:
    name: str
    tokens: list[SpecToken] | None  # None: infer from the signature
    origin: str  # where the spec was given, for messages


# Preprocessed text of a source, by its file name; BrainEventError when the preprocessor fails.
Preprocess = Callable[[str], str]


@dataclass(frozen=True)
class _Source:
    file_name: str
    lexed: LexResult
    functions: tuple[CxxSignature, ...]


# The functions one reading (plain or after macro expansion) finds in a source.
_FunctionsOf = Callable[[_Source], Sequence[CxxSignature]]


@dataclass
class _Expander:
    """Signatures after macro expansion, one preprocessor run per source at most."""

    preprocess: Preprocess | None
    done: dict[str, list[CxxSignature]] = field(default_factory=dict)
    failure: str = ""  # why the preprocessor failed, for the not-found message

    def functions(self, src: _Source) -> list[CxxSignature]:
        if self.preprocess is None:
            return []
        if src.file_name not in self.done:
            from brainevent.spec.expanded import expanded_functions

            try:
                text = self.preprocess(src.file_name)
            except BrainEventError as exc:
                self.failure = self.failure or exc.message
                text = ""
            self.done[src.file_name] = expanded_functions(text, src.file_name) if text else []
        return self.done[src.file_name]


def resolve_functions(
    functions: Functions, sources: Sequence[tuple[str, str]], preprocess: Preprocess | None = None
) -> list[FunctionSpec]:
    """Checked specs for the requested entry points, in request order."""
    scanned = [_scan(name, text) for name, text in _check_sources(sources)]
    requests = _requests(functions, scanned)
    expander = _Expander(preprocess)
    specs: list[FunctionSpec] = []
    for req in requests:
        sig = _locate_anywhere(req.name, scanned, expander)
        tokens = req.tokens if req.tokens is not None else infer_spec(sig)
        if not any(t.role is Role.RET for t in tokens):  # refused: XLA would drop the call
            given = (
                f"the arg_spec from {req.origin}" if req.origin else "the spec inferred from its signature"
            )
            raise _no_output(req.name, sig, given, [t.shown() for t in tokens])
        params = bind_tokens(sig, tokens, req.origin)
        specs.append(FunctionSpec(req.name, params, sig.file_name, sig.line, sig.scope))
    return specs


def _no_output(name: str, sig: CxxSignature, given: str, tokens: list[str]) -> SpecError:
    return SpecError(
        f"{name} ({sig.where}): {given}, {tokens}, has no output: an entry point needs at least "
        "one 'ret'. XLA drops a custom call whose results are unused, so this function would never "
        "run. Fix: give it a BE::Tensor output parameter (non-const) and a 'ret' token for it, and "
        "write the result (or a status) there.",
        function=name,
        line=sig.line,
        file=sig.file_name,
        tokens=tokens,
    )


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


def _scan(file_name: str, text: str) -> _Source:
    lexed = lex(text)
    return _Source(file_name, lexed, tuple(scan_functions(lexed, file_name)))


def _requests(functions: Functions, scanned: list[_Source]) -> list[_Request]:
    requests: list[_Request]
    if functions is None:
        requests = _from_annotations(scanned)
    elif isinstance(functions, Mapping):
        requests = [_from_entry(name, tokens) for name, tokens in functions.items()]
    elif isinstance(functions, list | tuple):
        requests = [_from_entry(name, None) for name in functions]
        names = [r.name for r in requests]
        twice = next((n for k, n in enumerate(names) if n in names[:k]), None)
        if twice is not None:
            raise SpecError(f"functions lists {twice!r} twice; list each function once.", function=twice)
    else:
        raise SpecError(
            f"functions= must be {_ACCEPTED_FUNCTIONS}; got {type(functions).__name__} {functions!r:.80}.",
            functions_type=type(functions).__name__,
        )
    if not requests:
        files = ", ".join(s.file_name for s in scanned)
        raise SpecError(
            f"No functions to expose from {files}: pass functions= ({_ACCEPTED_FUNCTIONS}) "
            "or add a '// @BE <function> [tokens...]' comment above each entry point.",
            files=[s.file_name for s in scanned],
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
        return _Request(name, None, "")
    return _Request(name, parse_tokens(name, tokens), "functions=")  # type: ignore[arg-type]


def _from_annotations(scanned: list[_Source]) -> list[_Request]:
    requests: list[_Request] = []
    seen: dict[str, Annotation] = {}
    for src in scanned:
        for ann in discover_annotations(src.lexed, src.file_name, seen):
            tokens = parse_tokens(ann.function, ann.tokens) if ann.tokens else None
            requests.append(_Request(ann.function, tokens, f"'@BE' at {ann.where}"))
    return requests


def _locate_anywhere(name: str, scanned: list[_Source], expander: _Expander) -> CxxSignature:
    """The plain reading's signature of ``name``, or the expanded one where the plain reading
    finds none or one with a type it cannot map."""
    try:
        plain: CxxSignature | None = _locate(name, scanned, lambda src: src.functions)
    except SpecError:
        if expander.preprocess is None:
            raise
        plain = None
    if plain is not None and (
        expander.preprocess is None or all(classify(p).kind != "unmappable" for p in plain.params)
    ):
        return plain
    try:
        return _locate(name, scanned, expander.functions)
    except SpecError as exc:
        if plain is not None:
            return plain  # the plain reading's complaint is about the user's own text
        if expander.failure:
            note = f" Reading the sources after macro expansion failed too: {expander.failure}"
            raise SpecError(exc.message + note, **exc.data) from None
        raise


def _locate(name: str, scanned: list[_Source], functions_of: _FunctionsOf) -> CxxSignature:
    """The single host definition of ``name`` across all sources."""
    hosts = ([s for s in functions_of(src) if s.name == name and s.kind == "host"] for src in scanned)
    per_file = [found for found in (pick_one(name, h) for h in hosts) if found is not None]
    if len(per_file) > 1 and sum(s.is_definition for s in per_file) != 1:
        problem = "found in several sources ({}). Define each entry point in exactly one source."
        raise clash_error(name, per_file, problem)
    found = pick_one(name, per_file)  # declarations elsewhere must agree with the one definition
    if found is None:
        raise _not_found(name, scanned, functions_of)
    return found


def _not_found(name: str, scanned: list[_Source], functions_of: _FunctionsOf) -> SpecError:
    files = [s.file_name for s in scanned]
    device = [s for src in scanned for s in functions_of(src) if s.name == name]
    if device:
        kind = "__global__ kernel" if device[0].kind == "kernel" else "__device__ function"
        return SpecError(
            f"{name}: at {device[0].where} it is a {kind}, which the host cannot call "
            "through XLA. Fix: expose a host function that takes BE::Tensor parameters "
            "and launches the kernel.",
            function=name,
            files=files,
            line=device[0].line,
        )
    known = {s.name for src in scanned for s in functions_of(src) if s.kind == "host"}
    hint = did_you_mean(name, known)
    return SpecError(
        f"{name}: no function with this name is defined at namespace scope in {', '.join(files)}."
        + (hint or " Check the spelling, and that the function is not inside a class."),
        function=name,
        files=files,
    )
