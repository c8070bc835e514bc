"""Turn the user's ``functions=`` argument and C++ sources into checked FunctionSpecs.

``functions`` may be:

* a dict ``{name: tokens}`` — tokens a list/tuple of strings, one whitespace-
  separated string, or None to infer that function's spec from its C++ signature
  (as a list of names does);
* a list/tuple of names — every spec inferred from its signature;
* None — the ``// @BE name [tokens...]`` annotations of all sources decide.

Every entry point needs at least one output (``ret``): XLA drops a custom call whose
results nobody uses, so a function without one would silently never run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from brainevent.errors import SpecError
from brainevent.spec.annotations import discover_annotations
from brainevent.spec.bind import bind_tokens
from brainevent.spec.cxx_lexer import LexResult, lex
from brainevent.spec.infer import infer_spec
from brainevent.spec.model import FunctionSpec
from brainevent.spec.names import CXX_KEYWORDS, did_you_mean, is_c_identifier
from brainevent.spec.signature import CxxSignature, pick_one, scan_functions
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


@dataclass(frozen=True)
class _Source:
    file_name: str
    lexed: LexResult
    functions: tuple[CxxSignature, ...]


def resolve_functions(functions: Functions, sources: Sequence[tuple[str, str]]) -> list[FunctionSpec]:
    """Checked specs for the requested entry points, in request order."""
    scanned = [_scan(name, text) for name, text in _check_sources(sources)]
    requests = _requests(functions, scanned)
    specs: list[FunctionSpec] = []
    for req in requests:
        sig = _locate(req.name, scanned)
        tokens = req.tokens if req.tokens is not None else infer_spec(sig)
        params = bind_tokens(sig, tokens, req.origin)
        spec = FunctionSpec(req.name, params, sig.file_name, sig.line, sig.scope)
        _check_has_output(spec, sig, req.origin)
        specs.append(spec)
    return specs


def _check_has_output(spec: FunctionSpec, sig: CxxSignature, origin: str) -> None:
    if spec.rets:
        return
    given = f"the arg_spec from {origin}" if origin else "the spec inferred from its signature"
    raise SpecError(
        f"{spec.name} ({sig.where}): {given}, {spec.tokens()}, has no output ('ret'). XLA drops "
        "a custom call whose results are unused, so this function would never run. Fix: give it "
        "a BE::Tensor output parameter (non-const) and a 'ret' token for it, and write the "
        "result (or a status) there.",
        function=spec.name,
        line=sig.line,
        file=sig.file_name,
        tokens=spec.tokens(),
    )


def _check_sources(sources: object) -> list[tuple[str, str]]:
    if isinstance(sources, str | bytes) or not isinstance(sources, Sequence):
        raise SpecError(
            f"sources must be a list of (file_name, text) pairs, got {type(sources).__name__}.",
            sources_type=type(sources).__name__,
        )
    checked: list[tuple[str, str]] = []
    for k, item in enumerate(sources):
        ok = (
            isinstance(item, tuple | list)
            and len(item) == 2
            and isinstance(item[0], str)
            and isinstance(item[1], str)
        )
        if not ok:
            raise SpecError(
                f"sources[{k}] must be a (file_name, text) pair of strings, got {item!r:.80}.",
                index=k,
            )
        checked.append((item[0], item[1]))
    if not checked:
        raise SpecError("No C++ sources were given; pass at least one (file_name, text) pair.")
    return checked


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
        seen: set[str] = set()
        for req in requests:
            if req.name in seen:
                raise SpecError(
                    f"functions lists {req.name!r} twice; list each function once.",
                    function=req.name,
                )
            seen.add(req.name)
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
    _check_name(name)
    assert isinstance(name, str)
    if tokens is None:
        return _Request(name, None, "")
    return _Request(name, parse_tokens(name, tokens), "functions=")  # type: ignore[arg-type]


def _from_annotations(scanned: list[_Source]) -> list[_Request]:
    requests: list[_Request] = []
    where: dict[str, str] = {}
    for src in scanned:
        for ann in discover_annotations(src.lexed, src.file_name):
            if ann.function in where:
                raise SpecError(
                    f"{ann.function}: annotated in two places, {where[ann.function]} and "
                    f"{ann.where}. Keep one '// @BE' line per function.",
                    function=ann.function,
                    line=ann.line,
                    file=ann.file_name,
                )
            where[ann.function] = ann.where
            tokens = parse_tokens(ann.function, ann.tokens) if ann.tokens else None
            requests.append(_Request(ann.function, tokens, f"'@BE' at {ann.where}"))
    return requests


def _check_name(name: object) -> None:
    if not is_c_identifier(name) or name in CXX_KEYWORDS:
        raise SpecError(
            f"Function name {name!r} is not a valid C identifier (a letter or '_' followed "
            "by letters, digits or '_', and not a C++ keyword). Use the C++ function's name "
            "exactly as declared.",
            function=name,
        )


def _locate(name: str, scanned: list[_Source]) -> CxxSignature:
    """The single host definition of ``name`` across all sources."""
    per_file: list[CxxSignature] = []
    for src in scanned:
        hosts = [s for s in src.functions if s.name == name and s.kind == "host"]
        found = pick_one(name, hosts)
        if found is not None:
            per_file.append(found)
    if len(per_file) > 1:
        definitions = [s for s in per_file if s.is_definition]
        if len(definitions) != 1:
            places = ", ".join(s.where for s in per_file)
            raise SpecError(
                f"{name}: found in several sources ({places}). Define each entry point in "
                "exactly one source.",
                function=name,
                files=[s.file_name for s in per_file],
            )
        # Declarations elsewhere must agree with the one definition.
        return pick_one(name, per_file) or definitions[0]
    if per_file:
        return per_file[0]
    raise _not_found(name, scanned)


def _not_found(name: str, scanned: list[_Source]) -> SpecError:
    files = ", ".join(s.file_name for s in scanned)
    device = [s for src in scanned for s in src.functions if s.name == name]
    if device:
        kind = "__global__ kernel" if device[0].kind == "kernel" else "__device__ function"
        return SpecError(
            f"{name}: at {device[0].where} it is a {kind}, which the host cannot call "
            "through XLA. Fix: expose a host function that takes BE::Tensor parameters "
            "and launches the kernel.",
            function=name,
            files=[s.file_name for s in scanned],
            line=device[0].line,
        )
    known = {s.name for src in scanned for s in src.functions if s.kind == "host"}
    hint = did_you_mean(name, known)
    return SpecError(
        f"{name}: no function with this name is defined at namespace scope in {files}."
        + (hint or " Check the spelling, and that the function is not inside a class."),
        function=name,
        files=[s.file_name for s in scanned],
    )
