"""Code generation: what is appended to a kernel's translation unit, and the shared decoder unit.

The user's unit gets one C trampoline per entry point (so it is called exactly as declared),
then the ``BE_FFI_FUNCTION`` handler lines (a CUDA build compiles those as a host unit of its
own); the call-frame decoder (:func:`render_decoder`) is compiled once per toolchain
(stages/decoder.py). Why it is laid out so: docs/architecture.md, "The generated code".
"""

from __future__ import annotations

from collections.abc import Sequence

from ._version import BINDING_SCHEMA
from .headers import entry_symbol
from .spec.model import FunctionSpec, Param, Role
from .spec.out_shape import input_dim, parse_out_shape
from .vocabulary import BindingTarget, scalar, unhandled


def c_string_literal(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _call_arguments(spec: FunctionSpec) -> list[str]:
    tensor_index = attr_index = 0
    out: list[str] = []
    for param in spec.params:
        match param.role:
            case Role.ARG | Role.RET | Role.SCRATCH:  # scratch: decoded as a tensor, in parameter order
                tensor = f"t[{tensor_index}]"
                out.append(f"::BE::detail::scratch_of({tensor})" if param.role is Role.SCRATCH else tensor)
                tensor_index += 1
            case Role.ATTR:
                out.append(f"::BE::detail::load_attr<{param.cxx_type}>(a[{attr_index}])")
                attr_index += 1
            case Role.STREAM:  # an integer handle, or a pointer type such as cudaStream_t
                out.append(f"::BE::detail::stream_as<{param.cxx_type}>(stream)")
            case _:
                unhandled(param.role, "codegen._call_arguments")
    return out


def render_trampoline(spec: FunctionSpec) -> str:
    args = ", ".join(_call_arguments(spec))
    return (
        f"BE_ENTRY void {entry_symbol(spec.name)}(const ::BE::Tensor* t, void* const* a, int64_t stream) {{\n"
        "  (void)t; (void)a; (void)stream;\n"
        f"  {spec.qualified_name}({args});\n"
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


def _declared_ret_row(param: Param, spec: FunctionSpec) -> str:
    """A ``ret:<shape>`` result's row: the input's ordinal or the fixed dims (attributes as -(k+1))."""
    assert param.shape is not None
    decl = parse_out_shape(param.shape)
    assert decl is not None  # checked when the spec was bound
    if not decl.sized:  # ret:zeros: the caller gives the shape
        return "BE_RET"
    name, shape = c_string_literal(param.name), c_string_literal(param.shape)
    dtype = scalar(decl.dtype).cxx_enum if decl.dtype else "Invalid"
    if decl.like is not None:
        ordinal = [p.name for p in spec.args].index(decl.like)
        return f"BE_RET_LIKE({name}, {shape}, {ordinal}, {dtype})"
    attrs, inputs = [p.name for p in spec.attrs], [p.name for p in spec.args]
    dims = [_dim_code(d, attrs, inputs) for d in decl.dims or ()]
    return f"BE_RET_FIXED({name}, {shape}, {dtype}, {len(dims)}, {', '.join(dims)})"


def _dim_code(dim: int | str, attrs: list[str], inputs: list[str]) -> str:
    """A fixed dim's code in the parameter table: itself, attribute k as -(k+1), and dim d of
    input k as kInputDim - (k * 256 + d) (brainevent/ffi_function.h)."""
    of_input = input_dim(dim)
    if of_input is not None:
        return f"::BE::ffi::kInputDim - {inputs.index(of_input[0]) * 256 + of_input[1]}"
    return str(dim) if isinstance(dim, int) else str(-(attrs.index(dim) + 1))


def _param_row(param: Param, spec: FunctionSpec) -> str:
    match param.role:
        case Role.ARG | Role.STREAM | Role.SCRATCH:
            return f"BE_{param.role.name}"  # the row macros BE_ARG, BE_STREAM, BE_SCRATCH
        case Role.RET:
            return "BE_RET" if param.shape is None else _declared_ret_row(param, spec)
        case Role.ATTR:
            assert param.dtype is not None
            return f"BE_ATTR({c_string_literal(param.name)}, {scalar(param.dtype).cxx_enum})"
        case _:
            unhandled(param.role, "codegen._param_row")


def _render_function(module: str, spec: FunctionSpec, target: BindingTarget) -> str:
    rows = " ".join(_param_row(p, spec) for p in spec.params)
    target_name = c_string_literal(f"{module}.{spec.name}")
    location = c_string_literal(f"{spec.source_file}:{spec.line}")
    return (
        f"// {spec.name}: {' '.join(spec.tokens())}\n"
        f"BE_FFI_FUNCTION({spec.name}, {target_name}, {location}, {target.cxx_enum},\n"
        f"                {rows})\n"
    )


def render_binding(module: str, specs: Sequence[FunctionSpec], *, target: BindingTarget) -> str:
    """The handler lines for ``specs`` on ``target`` (each declares the trampoline it calls, so
    they compile in any unit of the module)."""
    header = (
        f"// Generated by brainevent (binding schema {BINDING_SCHEMA}) for module {module!r}.\n"
        "// XLA FFI handlers over the C ABI; see brainevent/ffi_function.h.\n"
        '#include "brainevent/ffi_function.h"\n'
    )
    return header + "".join(_render_function(module, spec, target) for spec in specs)


def render_decoder(*, target: BindingTarget) -> str:
    """The decoder's translation unit for ``target``: the same for every module, so it is
    compiled once per toolchain and platform and linked into each module."""
    defines = "".join(f"#define {name} 1\n" for name in target.defines)
    return (
        f"// Generated by brainevent (binding schema {BINDING_SCHEMA}): the XLA FFI call-frame\n"
        f"// decoder for {target.tag} modules, shared by all of them.\n"
        f"{defines}"
        '#include "brainevent/ffi_binding.h"\n'
    )
