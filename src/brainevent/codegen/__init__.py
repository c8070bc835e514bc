"""Code generation: the C trampolines appended to kernel sources, and the FFI binding."""

from .binding import BINDING_SCHEMA, handler_symbol, render_binding
from .entry_points import render_kernel_unit

__all__ = ["BINDING_SCHEMA", "handler_symbol", "render_binding", "render_kernel_unit"]
