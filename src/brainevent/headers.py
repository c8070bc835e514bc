"""The C++ headers every module compiles against: brainevent's own (where, their digest, the
symbols a binding exports, as ``BE_FFI_FUNCTION`` pastes them) and XLA's FFI headers from jaxlib
(found without importing JAX). A cache hit reads this: only the standard library is imported.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from functools import cache
from pathlib import Path

from .errors import HeaderNotFoundError
from .fileio import read_blocks, sha256_file

INCLUDE_DIR = Path(os.path.join(os.path.dirname(__file__), "include"))  # one Path: a cache hit imports this


def include_dir() -> str:
    """The directory to put on the include path to use ``brainevent/common.h`` elsewhere."""
    return str(INCLUDE_DIR)


def package_header_files() -> list[str]:
    """The paths of ``brainevent/*.h``, sorted."""
    directory = os.path.join(INCLUDE_DIR, "brainevent")
    names = sorted(e.name for e in os.scandir(directory) if e.name.endswith(".h") and e.name[0] != ".")
    return [os.path.join(directory, name) for name in names]


@cache
def package_headers_digest() -> str:
    """SHA-256 over the names and contents of ``brainevent/*.h`` (a hit remembers it by the
    files' stamps: stages/module_key.py)."""
    # os.scandir and read_blocks: on a first cache hit, pathlib's overhead was most of the cost.
    digest = hashlib.sha256()
    for path in package_header_files():
        digest.update(os.path.basename(path).encode() + b"\0")
        for block in read_blocks(path):
            digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


# ---- the symbols a compiled module exports -------------------------------------------------


def entry_symbol(function: str) -> str:
    """The C trampoline appended to the user's translation unit."""
    return f"be_entry_{function}"


def handler_symbol(function: str, *, command_buffer: bool) -> str:
    """The exported XLA FFI handler, with or without the command-buffer trait."""
    return f"be_ffi_{function}__graph" if command_buffer else f"be_ffi_{function}"


def forward_symbol(function: str) -> str:
    """The exported forwarding slot a reloaded module's implementation is stored in."""
    return f"be_fwd_{function}"


def impl_symbol(function: str) -> str:
    """The entry a forwarding slot points at: it never forwards, so slots cannot form cycles."""
    return f"be_impl_{function}"


# ---- XLA's FFI headers ---------------------------------------------------------------------

_C_API = os.path.join("xla", "ffi", "api", "c_api.h")  # os.path, not pathlib: a first hit runs this


@cache
def xla_include_dir() -> Path:
    spec = importlib.util.find_spec("jaxlib")
    if spec is None or not spec.submodule_search_locations:
        raise HeaderNotFoundError(
            "jaxlib is not installed, so the XLA FFI headers are missing. Install JAX: `pip install jax`."
        )
    for location in spec.submodule_search_locations:
        include = os.path.join(location, "include")
        if os.path.isfile(os.path.join(include, _C_API)):
            return Path(include)
    raise HeaderNotFoundError(
        f"jaxlib at {list(spec.submodule_search_locations)} has no {_C_API}; "
        "this jaxlib is too old for XLA FFI. Upgrade it: `pip install -U jax jaxlib`."
    )


def c_api_header() -> str:
    return os.path.join(xla_include_dir(), _C_API)


@cache
def c_api_digest() -> str:
    """sha256 of the C ABI header, the only XLA header bindings compile against."""
    return sha256_file(c_api_header())
