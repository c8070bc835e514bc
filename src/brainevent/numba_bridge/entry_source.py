"""The XLA FFI entry shared by the compiled launchers: one per operand count.

Our arg_spec has a fixed arity, so each launcher gets a small entry for ``n_inputs`` inputs
and ``n_outputs`` outputs that collects the tensors and hands them to the launcher's core.
"""

from __future__ import annotations


def arity_entry(function: str, core_call: str, n_inputs: int, n_outputs: int, *, stream: bool) -> str:
    """``void function(in..., out..., int64_t kernel_id[, int64_t stream])`` calling
    ``core_call(kernel_id, operands, count[, stream])``."""
    names = [f"in{i}" for i in range(n_inputs)] + [f"out{i}" for i in range(n_outputs)]
    tokens = " ".join(["arg"] * n_inputs + ["ret"] * n_outputs + ["attr.kernel_id:int64"])
    params = [f"const BE::Tensor {n}" for n in names[:n_inputs]]
    params += [f"BE::Tensor {n}" for n in names[n_inputs:]]
    params.append("int64_t kernel_id")
    call_args = f"kernel_id, operands, {len(names)}"
    if stream:
        tokens += " stream"
        params.append("int64_t stream")
        call_args += ", stream"
    pointers = ", ".join(f"&{n}" for n in names)
    return (
        f"// @BE {function} {tokens}\n"
        f"void {function}({', '.join(params)}) {{\n"
        f"  const BE::Tensor* operands[] = {{{pointers}}};\n"
        f"  {core_call}({call_args});\n"
        "}\n"
    )
