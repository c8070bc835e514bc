"""The environment variables a build reads besides ``BRAINEVENT_*`` (config.py): one table, read
by the cache key, the toolchain memo and every toolchain search.

A variable the compilers read themselves is keyed by its value; one a search reads, by the
identity of what is found, and every shortcut that skips the search (the memo) by the value
(docs/caching.md, "The key").
"""

from __future__ import annotations

import os

COMPILER, SEARCH = "read by the compilers", "read by the searches for them"

# g++, clang, nvcc and the linker: header and library search, their own programs, flags, dates;
# the linker writes LD_RUN_PATH into a library, and resolves libraries' dependencies (as does
# cuda-pathfinder) through LD_LIBRARY_PATH.
_COMPILERS = "CPATH C_INCLUDE_PATH CPLUS_INCLUDE_PATH LIBRARY_PATH GCC_EXEC_PREFIX COMPILER_PATH"
_COMPILERS += " SOURCE_DATE_EPOCH NVCC_PREPEND_FLAGS NVCC_APPEND_FLAGS NVCC_CCBIN LD_RUN_PATH LD_LIBRARY_PATH"
# Where the compilers and NVIDIA's libraries are found.
_SEARCHES = "PATH CXX CC CONDA_PREFIX CUDA_HOME CUDA_PATH"
TOOLCHAIN_ENVIRONMENT = {
    **dict.fromkeys(_COMPILERS.split(), COMPILER),
    **dict.fromkeys(_SEARCHES.split(), SEARCH),
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
    """Every variable of the table, as set: what a shortcut past a toolchain search is keyed by."""
    env = os.environ
    return sorted((k, env[k]) for k in TOOLCHAIN_ENVIRONMENT if k in env)
