"""The kernel translation unit: the user's source, one C trampoline per entry point, then the
FFI handlers (codegen/binding.py). The trampolines live in the user's unit so they call the entry
exactly as declared (namespaces, ``static``, name mangling never leak) and catch C++ exceptions
where they are thrown.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..spec.model import FunctionSpec, Role
from ..vocabulary import entry_symbol, unhandled


def c_string_literal(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _call_arguments(spec: FunctionSpec) -> list[str]:
    tensor_index = attr_index = 0
    out: list[str] = []
    for param in spec.params:
        match param.role:
            case Role.ARG | Role.RET:
                out.append(f"t[{tensor_index}]")
                tensor_index += 1
            case Role.SCRATCH:  # decoded as a tensor, in parameter order like the others
                out.append(f"::BE::detail::scratch_of(t[{tensor_index}])")
                tensor_index += 1
            case Role.ATTR:
                out.append(f"::BE::detail::load_attr<{param.cxx_type}>(a[{attr_index}])")
                attr_index += 1
            case Role.STREAM:  # an integer handle, or a pointer type such as cudaStream_t
                out.append(f"::BE::detail::stream_as<{param.cxx_type}>(stream)")
            case _:
                unhandled(param.role, "codegen.entry_points")
    return out


def render_trampoline(spec: FunctionSpec) -> str:
    args = ", ".join(_call_arguments(spec))
    return (
        f"BE_ENTRY const char* {entry_symbol(spec.name)}(const ::BE::Tensor* t, void* const* a, "
        "int64_t stream) {\n"
        "  (void)t; (void)a; (void)stream;\n"
        f"  return ::BE::detail::guarded_call([&] {{ {spec.qualified_name}({args}); }});\n"
        "}\n"
    )


def render_kernel_unit(
    display_name: str, source: str, specs: Sequence[FunctionSpec], binding: str = ""
) -> str:
    """The unit compiled for one source file: its text, a trampoline per entry point, then
    ``binding``; ``#line`` directives make diagnostics and ``__FILE__`` name the user's lines."""
    parts = [f"#line 1 {c_string_literal(display_name)}\n", source]
    if not source.endswith("\n"):
        parts.append("\n")
    if specs:
        parts += ['#line 1 "<brainevent entry points>"\n', '#include "brainevent/entry.h"\n']
        parts.extend(render_trampoline(spec) for spec in specs)
    if binding:
        parts += ['#line 1 "<brainevent binding>"\n', binding]
    return "".join(parts)
