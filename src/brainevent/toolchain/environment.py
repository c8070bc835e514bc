"""The environment variables a build reads besides ``BRAINEVENT_*`` (config.py): one table, read
by the cache key, the toolchain memo, recalled loads and every toolchain search.

A variable the compilers read themselves changes what they make of the same sources and flags:
its value is keyed (``CPATH`` pointing elsewhere finds another ``<v.h>``). A variable a search
reads changes which compiler or library is found: what is found is keyed by its identity, and
every shortcut that skips the search (the memo, a recalled load) is keyed by the value.
"""

from __future__ import annotations

import os

COMPILER, SEARCH = "read by the compilers", "read by the searches for them"

TOOLCHAIN_ENVIRONMENT: dict[str, str] = {
    # g++, clang and nvcc: header and library search, their own programs, flags, dates
    "CPATH": COMPILER,
    "C_INCLUDE_PATH": COMPILER,
    "CPLUS_INCLUDE_PATH": COMPILER,
    "LIBRARY_PATH": COMPILER,
    "GCC_EXEC_PREFIX": COMPILER,
    "COMPILER_PATH": COMPILER,
    "SOURCE_DATE_EPOCH": COMPILER,
    "NVCC_PREPEND_FLAGS": COMPILER,
    "NVCC_APPEND_FLAGS": COMPILER,
    "NVCC_CCBIN": COMPILER,
    "LD_RUN_PATH": COMPILER,  # the linker writes it into the library as its run path
    "LD_LIBRARY_PATH": COMPILER,  # the linker resolves libraries' dependencies there; cuda-pathfinder too
    # where the compilers and NVIDIA's libraries are found
    "PATH": SEARCH,
    "CXX": SEARCH,
    "CC": SEARCH,
    "CONDA_PREFIX": SEARCH,
    "CUDA_HOME": SEARCH,
    "CUDA_PATH": SEARCH,
}


def variable(name: str) -> str | None:
    """The value of ``name``, a variable of the table (KeyError for any other)."""
    TOOLCHAIN_ENVIRONMENT[name]
    return os.environ.get(name)


def keyed_environment() -> dict[str, str]:
    """The variables the compilers read, as set now (an empty value means something to gcc)."""
    env, table = os.environ, TOOLCHAIN_ENVIRONMENT
    return {name: env[name] for name in table if table[name] is COMPILER and name in env}


def shortcut_environment() -> list[tuple[str, str]]:
    """Every variable a shortcut past a search or a key depends on: the table's and the
    ``BRAINEVENT_*`` ones (their parser is config.py's; here they are only compared)."""
    env = os.environ
    return sorted((k, env[k]) for k in env if k in TOOLCHAIN_ENVIRONMENT or k.startswith("BRAINEVENT_"))
