"""The names of the C symbols a compiled module exports.

The C++ side builds the same names by token pasting in ``BE_FFI_FUNCTION``
(``brainevent/ffi_function.h``); ``tests/codegen/test_vocabulary.py`` checks a built library
against them. They live apart from :mod:`brainevent.vocabulary` because registering a
cache hit needs the names and none of the vocabulary's tables.
"""

from __future__ import annotations


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
