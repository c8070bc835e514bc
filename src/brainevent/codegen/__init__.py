"""Code generation: the trampolines and FFI handlers appended to kernel sources, and the shared decoder."""

from .binding import BINDING_SCHEMA, handler_symbol, render_binding, render_decoder
from .entry_points import render_kernel_unit

__all__ = ["BINDING_SCHEMA", "handler_symbol", "render_binding", "render_decoder", "render_kernel_unit"]
