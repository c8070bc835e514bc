"""The schema of every record brainevent reads back from disk or from a job's key-value store.

Each reader passes what it parsed through one function here first: a record that does not
match raises :class:`RecordError` (a ValueError) naming the field, and the reader treats it as
absent or raises a typed error naming the file and the fix, so a damaged record never surfaces
as a KeyError, a TypeError or an AttributeError. The checks are plain ``isinstance`` tests.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NoReturn

# What a Role row may hold (vocabulary.Role's values, spelled out: a hit imports no spec code).
ROLES = frozenset({"arg", "ret", "stream", "attr", "scratch"})
_HEX_DIGITS = frozenset("0123456789abcdef")  # not a regex: compiling one is a hit's cost


class RecordError(ValueError):
    """A record that does not match its schema."""


def _fail(where: str, why: str) -> NoReturn:
    raise RecordError(f"{where} {why}")


def parse_json(data: bytes | str, where: str) -> Any:
    """JSON text, or RecordError (bad UTF-8, bad JSON, or nesting too deep to parse)."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        _fail(where, f"is not valid JSON ({type(exc).__name__})")


def _is_int(value: object) -> bool:
    return type(value) is int  # JSON gives int or bool; bool is not a size


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_digest(value: object) -> bool:
    return type(value) is str and len(value) == 64 and _HEX_DIGITS.issuperset(value)


def _dict(value: object, where: str) -> dict[str, Any]:
    # Parsed JSON: an object's keys are always strings.
    if type(value) is not dict:
        _fail(where, "is not a JSON object")
    return value


def _str_list(value: object, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        _fail(where, "is not a list of strings")
    return value


def dependency_rows(value: object, where: str = "dependencies") -> dict[str, list[Any]]:
    """``{path: [size, mtime_ns, sha256 or None]}`` (cache/deps.py)."""
    rows = _dict(value, where)
    # A hit reads hundreds of rows: plain type tests, no calls. A digest only needs to be a
    # string (one that is not a SHA-256 can never equal a file's: stale, never a false hit).
    for path, row in rows.items():
        if (
            type(row) is not list
            or len(row) != 3
            or type(row[0]) is not int
            or type(row[1]) is not int
            or not (row[2] is None or type(row[2]) is str)
            or not path
            or "\0" in path
        ):
            _fail(f"{where}[{path!r}]", "is not [size, mtime_ns, sha256 or null] under a plain path")
    return rows


def _param_row(row: object, where: str) -> None:
    # Trailing fields of spec.model.Param that hold None may be left out of a row.
    if not (isinstance(row, list) and 4 <= len(row) <= 6):
        _fail(where, "is not [role, name, dtype, cxx_type(, scratch bytes(, declared shape))]")
    role, name, dtype, cxx_type, *rest = row
    if not (isinstance(role, str) and role in ROLES and isinstance(name, str) and isinstance(cxx_type, str)):
        _fail(where, "has a bad role, name or C++ type")
    if dtype is not None and not isinstance(dtype, str):
        _fail(where, "has a dtype that is not a string")
    if rest and not (rest[0] is None or _is_int(rest[0])):
        _fail(where, "has a scratch size that is not an integer")
    if len(rest) > 1 and not (rest[1] is None or isinstance(rest[1], str)):
        _fail(where, "has a declared shape that is not a string")


def _function_row(value: object, where: str) -> None:
    row = _dict(value, where)
    params = row.get("params")
    if not isinstance(params, list):
        _fail(where, "has no list of params")
    for i, param in enumerate(params):
        _param_row(param, f"{where}.params[{i}]")
    for field, check in (("source_file", str), ("scope", str), ("vmap_method", str)):
        if field in row and not isinstance(row[field], check):
            _fail(f"{where}.{field}", "is not a string")
    for field in ("line", "num_batch_dims"):
        if field in row and not _is_int(row[field]):
            _fail(f"{where}.{field}", "is not an integer")


def function_table(value: object, where: str) -> dict[str, Any]:
    """``{function: row}`` as a manifest or a recall record holds the functions' specs."""
    rows = _dict(value, f"{where} functions")
    for function, row in rows.items():
        _function_row(row, f"{where} function {function!r}")
    return rows


# Manifest fields: name -> check. Only those in _REQUIRED must be present.
_MANIFEST_FIELDS = {
    "key": _is_digest,
    "name": lambda v: isinstance(v, str) and bool(v),
    "platform": lambda v: isinstance(v, str),
    "artifact": lambda v: isinstance(v, str) and bool(v) and "/" not in v and "\0" not in v,
    "artifact_sha256": _is_digest,
    "functions": lambda v: isinstance(v, dict),
    "inputs": lambda v: isinstance(v, dict),
    "created": _is_number,
    "build_seconds": _is_number,
    "artifact_size": _is_int,
    "artifact_mtime_ns": _is_int,
    "dependencies": lambda v: isinstance(v, dict),
    "dependencies_since_ns": _is_int,
    "variant": lambda v: isinstance(v, dict),
    "schema": _is_int,
}
_REQUIRED = frozenset(
    {"key", "name", "platform", "artifact", "artifact_sha256", "functions", "variant", "schema"}
)


def manifest(raw: object, schema: int, where: str = "manifest.json") -> dict[str, Any]:
    """A cache entry's (or a bundle's) manifest, as Manifest(**fields) takes it."""
    data = _dict(raw, where)
    if data.get("schema") != schema:
        _fail(where, f"is not of schema {schema}")
    unknown = set(data) - set(_MANIFEST_FIELDS)
    if unknown:
        _fail(where, f"has unknown fields {sorted(unknown)}")
    for field, check in _MANIFEST_FIELDS.items():
        if field not in data:
            if field in _REQUIRED:
                _fail(where, f"has no {field!r}")
            continue
        if not check(data[field]):
            _fail(f"{where} field {field!r}", "has the wrong type or form")
    function_table(data["functions"], where)
    if "dependencies" in data:
        dependency_rows(data["dependencies"], f"{where} dependencies")
    _inputs(_dict(data.get("inputs", {}), f"{where} inputs"), f"{where} inputs")
    return data


def _inputs(inputs: Mapping[str, Any], where: str) -> None:
    """The few inputs a reader interprets (the rest are only displayed)."""
    if "archs" in inputs and inputs["archs"] is not None:
        _str_list(inputs["archs"], f"{where}.archs")
    headers = inputs.get("bundle_headers")
    if headers is not None:
        rows = _dict(headers, f"{where}.bundle_headers")
        if not all(_is_digest(v) and k and "\0" not in k for k, v in rows.items()):
            _fail(f"{where}.bundle_headers", "is not {relative path: sha256}")
    root = inputs.get("bundle_package_root")
    if root is not None and not isinstance(root, str):
        _fail(f"{where}.bundle_package_root", "is not a string")
    if "lowered" in inputs or "kind" in inputs:  # an NVRTC kernel's (nvrtc/cache.py)
        _nvrtc_inputs(inputs, where)


def _nvrtc_inputs(inputs: Mapping[str, Any], where: str) -> None:
    """The artifact's kind, and the symbol of each name expression compiled, none missing."""
    if inputs.get("kind") not in ("cubin", "ptx"):
        _fail(f"{where}.kind", "is not 'cubin' or 'ptx'")
    names = _str_list(inputs.get("name_expressions"), f"{where}.name_expressions")
    lowered = _dict(inputs.get("lowered"), f"{where}.lowered")
    if sorted(lowered) != sorted(names) or not all(isinstance(v, str) and v for v in lowered.values()):
        _fail(f"{where}.lowered", "does not map each name expression to its symbol")


def object_record(raw: object, where: str) -> dict[str, Any]:
    """An object's ``<key>.deps.json``: the files its compiler read and the object itself."""
    data = _dict(raw, where)
    dependency_rows(data.get("dependencies"), f"{where} dependencies")
    if not _is_int(data.get("since_ns")):
        _fail(where, "has no integer since_ns")
    if not (_is_int(data.get("size")) and data["size"] >= 0 and _is_digest(data.get("sha256"))):
        _fail(where, "does not record the object's size and sha256")
    return data


def remembered(raw: object, kind: str, where: str) -> dict[str, Any]:
    """A remembered benchmark ``"run"`` or ``"choice"`` (custom_kernel/remembered.py)."""
    data = _dict(raw, where)
    if not isinstance(data.get("sources"), str):
        _fail(f"{where}.sources", "is not a string")
    if kind == "run":
        runs = data.get("records")
        if not isinstance(runs, list) or not all(type(r) is dict for r in runs):
            _fail(f"{where}.records", "is not a list of JSON objects")
        return data
    for field in ("primitive", "platform", "device_kind", "backend"):
        if not isinstance(data.get(field), str):
            _fail(f"{where}.{field}", "is not a string")
    _str_list(data.get("inputs"), f"{where}.inputs")
    _str_list(data.get("outputs"), f"{where}.outputs")
    for backend, pair in _dict(data.get("timings_ms", {}), f"{where}.timings_ms").items():
        if not (isinstance(pair, list) and len(pair) == 2 and all(_is_number(t) for t in pair)):
            _fail(f"{where}.timings_ms[{backend!r}]", "is not [median, noise]")
    if "measured" in data and not _is_number(data["measured"]):
        _fail(f"{where}.measured", "is not a number")
    return data


def distributed_status(raw: bytes, where: str, chunk_bytes: int) -> dict[str, Any]:
    """A builder's ``status`` value (distributed/exchange.py)."""
    data = _dict(parse_json(raw, where), where)
    state = data.get("state")
    if state == "ok":
        size: Any = data.get("size")
        chunks: Any = data.get("chunks")
        if not (_is_digest(data.get("sha256")) and _is_int(size) and _is_int(chunks)):
            _fail(where, "has no sha256, size and chunk count")
        if size < 0 or chunks != max(1, -(-size // chunk_bytes)):
            _fail(where, f"announces {chunks!r} chunk(s) for {size!r} bytes")
    elif state == "error":
        if not isinstance(data.get("message", ""), str) or not isinstance(data.get("type", ""), str):
            _fail(where, "has an error message or type that is not a string")
        fields = data.get("data", {})
        if not isinstance(fields, dict) or not all(_field_name(k) for k in fields):
            _fail(where, "has error data that is not an object of plain field names")
    else:
        _fail(where, f"has an unknown state {state!r}")
    return data


def _field_name(name: object) -> bool:
    """An error field a peer may set: a plain public name, not one the exception itself uses."""
    return (
        isinstance(name, str)
        and name.isidentifier()
        and not name.startswith("_")
        and name not in ("message", "data", "args", "with_traceback", "add_note")
    )


def owner_record(raw: bytes, where: str) -> dict[str, Any]:
    """A build lock's ``<key>.owner`` (who holds it, for log lines)."""
    data = _dict(parse_json(raw, where), where)
    if not (_is_int(data.get("pid")) and isinstance(data.get("host"), str) and _is_number(data.get("since"))):
        _fail(where, "is not {pid, host, since}")
    return data


def alias(raw: bytes, where: str) -> str:
    """An ``<key>.alias`` file: the 64 hex digits of the key last built."""
    try:
        text = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        _fail(where, "is not ASCII")
    if not _is_digest(text):
        _fail(where, "does not hold a cache key")
    return text
