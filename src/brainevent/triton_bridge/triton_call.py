"""``triton_kernel``: a ``@triton.jit`` kernel as a JAX function, with plain ``triton`` and JAX.

Compiled by Triton's compiler at trace time; each call is one FFI custom call that launches the
cubin on XLA's stream: no Python per call, capturable in a CUDA graph, no jax-triton needed.
Parameters are laid out for the cubin launcher: a pointer per array, the scalars, then Triton's
trailing scratch pointers, counted from the PTX entry so that a Triton version with more or fewer
of them is caught instead of launched wrongly."""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..backends import require_library
from ..errors import CompileError, KernelCallError
from ..launchers.cubin import NULL, OPERAND, SCRATCH, Image, Param, scalar

if TYPE_CHECKING:
    from ..toolchain.cuda_arch import CudaArch

# JAX dtype name -> Triton element type.
_ELEMENT = {"bool": "i1", "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64"}
_ELEMENT |= {f"{sign}int{bits}": f"{sign[:1] or 'i'}{bits}" for sign in ("", "u") for bits in (8, 16, 32, 64)}
_ELEMENT |= {"float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5"}
# Triton scalar type -> the NumPy dtype of its bits, as the kernel receives them.
_SCALAR_DTYPE = {ty: name for name, ty in _ELEMENT.items() if "float8" not in name and name != "bfloat16"}
_SCALAR_DTYPE |= {"u1": "bool", "bf16": "float32"}  # bf16: the float32's top half (truncated, as Triton does)
POINTER_ALIGN = 16  # XLA's buffers are at least this aligned; kernels are compiled assuming it
_SCRATCH = ("global_scratch", "profile_scratch")  # Triton's trailing pointers, in order
_ENTRY = re.compile(r"\.entry\s+([A-Za-z_$][\w$]*)\s*\((.*?)\)", re.S)


def element_type(dtype: Any) -> str:
    name = np.dtype(dtype).name
    if name not in _ELEMENT:
        raise KernelCallError(
            f"Triton kernels cannot take arrays of dtype {name}; supported: {sorted(_ELEMENT)}",
            dtype=name,
        )
    return _ELEMENT[name]


def scalar_type(name: str, value: Any, annotation: str) -> str:
    """The Triton type of a scalar parameter: its annotation, else from the Python value."""
    if annotation and not annotation.startswith("*"):
        return annotation
    if isinstance(value, (bool, np.bool_)):
        return "i1"
    if isinstance(value, np.generic):
        return element_type(value.dtype)
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return "i32"
        if -(2**63) <= value < 2**63:
            return "i64"
        if 0 <= value < 2**64:
            return "u64"
        raise KernelCallError(f"Triton parameter {name!r} = {value} does not fit in 64 bits", parameter=name)
    if isinstance(value, float):
        return "fp32"
    raise KernelCallError(
        f"Triton parameter {name!r} must be a Python or NumPy number (or a tl.constexpr parameter), got "
        f"{type(value).__name__}; pass arrays positionally",
        parameter=name,
    )


def scalar_bytes(ty: str, value: Any) -> bytes:
    """The bytes of a scalar of Triton type ``ty``, as the kernel receives them."""
    if ty not in _SCALAR_DTYPE:
        raise KernelCallError(f"Triton scalar type {ty!r} is not supported as a parameter", type=ty)
    if ty[0] in "iu" and ty[1:] != "1" and not isinstance(value, (int, np.integer)):
        raise KernelCallError(f"Triton parameter of type {ty} needs an integer, got {value!r}", type=ty)
    packed = np.asarray(value, dtype=np.dtype(_SCALAR_DTYPE[ty]).newbyteorder("<")).tobytes()
    return packed[2:] if ty == "bf16" else packed


@dataclass(frozen=True)
class Bound:
    """A kernel's parameters for one call: what Triton compiles and how the launcher fills them."""

    signature: dict[str, str]  # parameter name -> Triton type ("constexpr" for constants)
    constexprs: dict[str, Any]
    attrs: dict[tuple[int, ...], list[list[Any]]]  # specialisation hints (pointer alignment)
    params: tuple[Param, ...]  # runtime parameters in order, without Triton's trailing scratch ones
    values: dict[str, Any]  # every non-array parameter by name (for a grid function)

    def key(self) -> tuple[Any, ...]:
        return (
            tuple(self.signature.items()),
            tuple((k, repr(v)) for k, v in self.constexprs.items()),
            repr(sorted(self.attrs.items())),
        )


def bind(kernel: Any, in_dtypes: Sequence[Any], out_dtypes: Sequence[Any], given: Mapping[str, Any]) -> Bound:
    """Arrays (inputs, outputs) take the first parameters; the rest come from ``given`` or defaults."""
    params = list(kernel.params)
    arrays = [*in_dtypes, *out_dtypes]
    name = getattr(kernel, "__name__", "kernel")
    if len(params) < len(arrays):
        raise KernelCallError(
            f"Triton kernel {name!r} takes {len(params)} parameter(s), but the call passes {len(in_dtypes)} "
            f"input(s) and {len(out_dtypes)} output(s): its first parameters must be one pointer per input, "
            "then one per output",
            kernel=name,
        )
    unknown = sorted(set(given) - {p.name for p in params[len(arrays) :]})
    if unknown:
        raise KernelCallError(
            f"Triton kernel {name!r} has no parameter(s) {unknown} after its {len(arrays)} array parameters; "
            f"those are {[p.name for p in params[len(arrays) :]]}",
            kernel=name,
        )
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    attrs: dict[tuple[int, ...], list[list[Any]]] = {}
    laid_out: list[Param] = []
    values: dict[str, Any] = {}
    for i, param in enumerate(params):
        if i < len(arrays):
            if param.is_constexpr:
                raise KernelCallError(
                    f"Triton kernel {name!r}: parameter {param.name!r} receives array {i}, but it is a "
                    "tl.constexpr; put the array parameters first",
                    kernel=name,
                )
            signature[param.name] = "*" + element_type(arrays[i])
            attrs[(i,)] = [["tt.divisibility", POINTER_ALIGN]]
            laid_out.append(Param(OPERAND, i, POINTER_ALIGN))
            continue
        if param.name not in given and not param.has_default:
            raise KernelCallError(
                f"Triton kernel {name!r}: parameter {param.name!r} has no value; pass {param.name}=... "
                "to triton_kernel",
                kernel=name,
            )
        value = values[param.name] = given.get(param.name, param.default)
        if param.is_constexpr:
            signature[param.name] = "constexpr"
            constexprs[param.name] = value
            continue
        ty = scalar_type(param.name, value, param.annotation)
        signature[param.name] = ty
        laid_out.append(scalar(scalar_bytes(ty, value)))
        if ty[0] in "iu" and ty not in ("i1", "u1") and int(value) != 0 and int(value) % 16 == 0:
            attrs[(i,)] = [["tt.divisibility", 16]]  # the value is fixed for this call: a true hint
    return Bound(signature, constexprs, attrs, tuple(laid_out), values)


@dataclass(frozen=True)
class Compiled:
    entry: str
    image: Image
    n_ptx_params: int
    num_warps: int
    scratch: tuple[tuple[int, int], ...]  # (bytes per program, alignment): global, then profile
    cooperative: bool


_lock = threading.Lock()
_compiled: dict[tuple[Any, ...], Compiled] = {}


def compile_for(kernel: Any, bound: Bound, cc: int, options: Mapping[str, Any]) -> Compiled:
    """``kernel`` compiled for compute capability ``cc`` (e.g. 90), cached per process."""
    key = (kernel.cache_key, bound.key(), cc, tuple(sorted(options.items())))
    with _lock:
        hit = _compiled.get(key)
    if hit is not None:
        return hit
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    source = ASTSource(kernel, dict(bound.signature), dict(bound.constexprs), dict(bound.attrs))
    name = getattr(kernel, "__name__", "kernel")
    try:
        result = triton.compile(source, target=GPUTarget("cuda", cc, 32), options=dict(options))
    except Exception as exc:
        raise CompileError(
            f"Triton could not compile {name!r} for sm_{cc}: {type(exc).__name__}: {exc}", kernel=name
        ) from exc
    meta = result.metadata
    _check_supported(meta, name)
    found = _ENTRY.search(result.asm["ptx"])  # the entry's parameters, Triton's trailing ones included
    if found is None:
        raise CompileError("Triton produced PTX without a kernel entry")
    entry, count = found.group(1), found.group(2).count(".param")
    sizes = [(int(getattr(meta, f"{k}_size", 0)), int(getattr(meta, f"{k}_align", 1))) for k in _SCRATCH]
    image = Image(bytes(result.asm["cubin"]), int(meta.shared))
    cooperative = bool(getattr(meta, "launch_cooperative_grid", False))
    name = getattr(meta, "name", entry)
    compiled = Compiled(name, image, count, int(meta.num_warps), tuple(sizes), cooperative)
    with _lock:
        _compiled[key] = compiled
    return compiled


def _check_supported(meta: Any, name: str) -> None:
    unsupported = []
    if int(getattr(meta, "num_ctas", 1)) != 1:
        unsupported.append(f"num_ctas={meta.num_ctas} (thread block clusters)")
    if getattr(meta, "launch_pdl", False):
        unsupported.append("programmatic dependent launch (launch_pdl)")
    if getattr(meta, "tensordesc_meta", None):
        unsupported.append("tensor descriptors built on the host (TMA)")
    if unsupported:
        raise CompileError(
            f"Triton kernel {name!r} needs {', '.join(unsupported)}, which brainevent's launcher does not "
            "support; compile it without them",
            kernel=name,
        )


def trailing_params(
    compiled: Compiled, n_runtime: int, scratch_operands: Sequence[int | None]
) -> list[Param]:
    """Triton's trailing pointer parameters (global scratch, then profile scratch), each the
    scratch operand's address or null; their number is what the PTX entry has beyond ours."""
    extra = compiled.n_ptx_params - n_runtime
    if not 0 <= extra <= len(scratch_operands):
        raise CompileError(
            f"Triton kernel {compiled.entry!r} has {compiled.n_ptx_params} parameters in its PTX, expected "
            f"{n_runtime} plus up to {len(scratch_operands)} scratch pointers; this Triton version's calling "
            "convention is not one brainevent knows",
            kernel=compiled.entry,
        )
    out = []
    for (_, align), operand in zip(compiled.scratch[:extra], scratch_operands[:extra], strict=True):
        out.append(Param(NULL) if operand is None else Param(SCRATCH, operand, max(align, 1)))
    return out


GridValue = int | tuple[int, ...] | Callable[[dict[str, Any]], Any]


def _grid3(value: Any, name: str) -> tuple[int, int, int]:
    items = value if isinstance(value, (tuple, list)) else (value,)
    if not 1 <= len(items) <= 3 or any(
        isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0 for v in items
    ):
        raise KernelCallError(
            f"{name}: grid must be 1 to 3 non-negative ints (or a function of the parameters returning "
            f"them), got {value!r}",
            grid=repr(value),
        )
    dims = [int(v) for v in items] + [1] * (3 - len(items))
    return dims[0], dims[1], dims[2]


def _prepare(
    kernel: Any,
    grid: GridValue,
    given: dict[str, Any],
    options: dict[str, Any],
    archs: Sequence[CudaArch] | None,
    arrays: tuple[Any, ...],
    out_specs: list[Any],
) -> tuple[str, int, list[Any]]:
    """For ``BridgedFunction``: compiles ``kernel`` for the call and registers it; returns the
    target, the kernel id and the scratch buffers to allocate after the results."""
    import jax

    from ..launchers.cubin import gpu_archs, prepare_launch

    name = getattr(kernel, "__name__", "triton_kernel")
    bound = bind(kernel, [a.dtype for a in arrays], [s.dtype for s in out_specs], given)
    dims = _grid3(grid(dict(bound.values)) if callable(grid) else grid, name)
    how = "pass compute_capability='sm_90' (for example) to triton_kernel to compile without one"
    # Triton numbers an arch major * 10 + minor: 90 for sm_90 and sm_90a.
    ccs = sorted({a.cc for a in gpu_archs(archs, name, how)})
    compiled = {cc: compile_for(kernel, bound, cc, options) for cc in ccs}
    first = compiled[ccs[0]]
    shape = (first.entry, first.num_warps, first.n_ptx_params)
    if any((c.entry, c.num_warps, c.n_ptx_params) != shape for c in compiled.values()):
        raise KernelCallError(
            f"{name}: Triton compiled different entry points for {ccs}; use one "
            "GPU architecture (CUDA_VISIBLE_DEVICES) or pass compute_capability=",
            kernel=name,
        )
    programs = dims[0] * dims[1] * dims[2]
    scratch: list[Any] = []
    scratch_operands: list[int | None] = []
    for kind in range(2):  # global scratch, then profile scratch
        size, align = (max(c.scratch[kind][j] for c in compiled.values()) for j in (0, 1))
        scratch_operands.append(len(arrays) + len(out_specs) + len(scratch) if size else None)
        if size:
            scratch.append(jax.ShapeDtypeStruct((programs * size + align,), np.uint8))
    params = [*bound.params, *trailing_params(first, len(bound.params), scratch_operands)]
    block = (32 * first.num_warps, 1, 1)
    images = {cc: c.image for cc, c in compiled.items()}
    n_operands, coop = len(arrays) + len(out_specs) + len(scratch), first.cooperative
    target, kernel_id = prepare_launch(
        "triton", first.entry, dims, block, params, n_operands, images, cooperative=coop
    )
    return target, kernel_id, scratch


def triton_kernel(
    kernel: Any,
    outs: Any,
    *,
    grid: GridValue,
    num_warps: int = 4,
    num_stages: int = 3,
    compile_options: Mapping[str, Any] | None = None,
    compute_capability: Any = None,
    input_output_aliases: dict[int, int] | None = None,
    vmap_method: str | None = None,
    **params: Any,
) -> Callable[..., Any]:
    """Create a JAX-callable function from a ``@triton.jit`` kernel.

    The kernel's first parameters receive the input arrays, then one array per leaf of
    ``outs`` (to write); its other parameters come from ``params`` by name (scalars and
    ``tl.constexpr`` values), or from their defaults. It is compiled with Triton's compiler
    when traced (once per parameter types, constants and GPU architecture) and launched from
    compiled code on XLA's stream with ``num_warps * 32`` threads per program.

    Args:
        kernel: A ``@triton.jit`` function.
        outs: A ``jax.ShapeDtypeStruct`` or a pytree of them; results come back in that shape.
        grid: The launch grid: 1 to 3 ints, or a function of a dict of the non-array
            parameters (``lambda meta: (triton.cdiv(n, meta["BLOCK"]),)``) returning them.
        num_warps: Warps per program (Triton's option).
        num_stages: Software pipelining stages (Triton's option).
        compile_options: Further options for ``triton.compile`` (e.g. ``{"enable_fp_fusion": False}``).
        compute_capability: Architecture(s) to compile for (``"sm_90"``, ``"9.0"``, ``90`` or a
            list); by default those of the visible GPUs.
        input_output_aliases: ``{input index: output index}`` for in-place updates.
        vmap_method: ``jax.ffi.ffi_call``'s vmap method, for calls outside an ``XLACustomKernel``;
            ``"expand_dims"`` and ``"broadcast_all"`` run the launch once per batch element
            (the grid is fixed), as ``"sequential"`` does.
        **params: The kernel's remaining parameters by name.

    Raises:
        BackendNotInstalledError: Triton is not installed (``pip install triton``).
        KernelCallError: ``kernel`` is not a ``@triton.jit`` function, or a parameter or the grid
            is wrong (raised when the function is traced, for what depends on the arrays).
    """
    require_library("triton")
    from triton.runtime.jit import JITFunction

    name = getattr(kernel, "__name__", type(kernel).__name__)
    if not isinstance(kernel, JITFunction):
        inner = getattr(kernel, "fn", None)
        hint = (
            "; autotuned or heuristic kernels are not supported: pick a configuration and pass its values "
            "as parameters to the inner @triton.jit kernel"
            if isinstance(inner, JITFunction) or hasattr(kernel, "configs")
            else ""
        )
        raise KernelCallError(
            f"triton_kernel needs a @triton.jit function, got {type(kernel).__name__} {name!r}{hint}",
            kernel=name,
        )
    for key, value in (("num_warps", num_warps), ("num_stages", num_stages)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise KernelCallError(f"triton_kernel: {key} must be a positive int, got {value!r}", kernel=name)
    if num_warps & (num_warps - 1) or num_warps > 32:
        raise KernelCallError(
            f"triton_kernel: num_warps must be a power of two up to 32, got {num_warps}", kernel=name
        )
    if not callable(grid):
        _grid3(grid, name)  # fail early on a fixed grid
    options = {"num_warps": num_warps, "num_stages": num_stages, **dict(compile_options or {})}
    from ..toolchain.cuda_arch import parse_compute_capability

    capabilities = None if compute_capability is None else parse_compute_capability(compute_capability)
    from ..calls.bridge import BridgedFunction
    from ..calls.operands import check_arrays

    check = functools.partial(check_arrays, name, scalars_go="as keywords of triton_kernel")
    prepare = functools.partial(_prepare, kernel, grid, dict(params), options, capabilities)
    # No launcher_for: the grid and sizes are fixed when the kernel is made, so under a batching
    # vmap it runs once per batch element (as numba_cuda_kernel does).
    return BridgedFunction(prepare, outs, vmap_method, input_output_aliases, name, check_args=check)
