"""XLA FFI headers shipped with jaxlib.

Located without importing JAX (the include directory sits inside the jaxlib
package), and digested once per process for the cache key.
"""

from __future__ import annotations

import importlib.util
import os
from functools import cache
from pathlib import Path

from ..errors import HeaderNotFoundError
from ..fileio import sha256_file

_C_API = os.path.join("xla", "ffi", "api", "c_api.h")  # os.path, not pathlib: a first hit runs this


@cache
def xla_include_dir() -> Path:
    spec = importlib.util.find_spec("jaxlib")
    if spec is None or not spec.submodule_search_locations:
        raise HeaderNotFoundError(
            "jaxlib is not installed, so the XLA FFI headers are missing. Install JAX: `pip install jax`.",
        )
    for location in spec.submodule_search_locations:
        include = os.path.join(location, "include")
        if os.path.isfile(os.path.join(include, _C_API)):
            return Path(include)
    raise HeaderNotFoundError(
        f"jaxlib at {list(spec.submodule_search_locations)} has no {_C_API}; "
        "this jaxlib is too old for XLA FFI. Upgrade it: `pip install -U jax jaxlib`.",
    )


@cache
def c_api_digest() -> str:
    """sha256 of the C ABI header, the only XLA header bindings compile against."""
    return sha256_file(os.path.join(xla_include_dir(), _C_API))
