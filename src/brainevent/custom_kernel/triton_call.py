"""``triton_kernel``: a ``@triton.jit`` kernel as a JAX function, with plain ``triton`` and JAX.

Compiled by Triton's compiler at trace time; each call is one FFI custom call that launches the
cubin on XLA's stream: no Python per call, capturable in a CUDA graph, no jax-triton needed."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import KernelCallError
from .libraries import require_library

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


@dataclass(eq=False)  # hashed by identity, as jax.jit needs
class TritonCall:
    """The JAX function ``triton_kernel`` returns; see there."""

    kernel: Any
    outs: Any
    grid: GridValue
    params: dict[str, Any]
    options: dict[str, Any]  # for triton.compile
    capabilities: list[int] | None
    call_options: dict[str, Any]  # vmap_method and input_output_aliases, for call_target

    def __post_init__(self) -> None:
        from ..calls.results import flatten_outs

        self.specs, self.treedef = flatten_outs(self.outs)
        self.__name__ = getattr(self.kernel, "__name__", "triton_kernel")

    def __call__(self, *arrays: Any) -> Any:
        import jax

        from ..calls.ffi import call_target
        from ..calls.operands import check_arrays, content_id
        from ..launchers.cubin import launcher_for, register
        from .triton_compile import bind, compile_for, trailing_params

        check_arrays(self.__name__, arrays, "as keywords of triton_kernel")
        bound = bind(self.kernel, [a.dtype for a in arrays], [s.dtype for s in self.specs], self.params)
        grid = _grid3(self.grid(dict(bound.values)) if callable(self.grid) else self.grid, self.__name__)
        from ..toolchain.cuda_arch import visible_archs

        # Triton numbers an arch major * 10 + minor: 90 for sm_90 and sm_90a.
        capabilities = self.capabilities or [a.cc for a in visible_archs(jax_first=True)]
        if not capabilities:
            raise KernelCallError(
                f"{self.__name__}: Triton kernels are compiled for the GPUs present, and neither JAX nor the "
                "CUDA driver reports one; run on a GPU machine, or pass compute_capability='sm_90' (for "
                "example) to triton_kernel to compile without one",
                kernel=self.__name__,
            )
        compiled = {cc: compile_for(self.kernel, bound, cc, self.options) for cc in capabilities}
        first = compiled[capabilities[0]]
        shape = (first.entry, first.num_warps, first.n_ptx_params)
        if any((c.entry, c.num_warps, c.n_ptx_params) != shape for c in compiled.values()):
            raise KernelCallError(
                f"{self.__name__}: Triton compiled different entry points for {capabilities}; use one "
                "GPU architecture (CUDA_VISIBLE_DEVICES) or pass compute_capability=",
                kernel=self.__name__,
            )
        programs = grid[0] * grid[1] * grid[2]
        scratch_specs: list[Any] = []
        scratch_operands: list[int | None] = []
        for kind in range(2):  # global scratch, then profile scratch
            size = max(c.scratch[kind][0] for c in compiled.values())
            align = max(c.scratch[kind][1] for c in compiled.values())
            if size == 0:
                scratch_operands.append(None)
                continue
            scratch_operands.append(len(arrays) + len(self.specs) + len(scratch_specs))
            scratch_specs.append(jax.ShapeDtypeStruct((programs * size + align,), np.uint8))
        params = [*bound.params, *trailing_params(first, len(bound.params), scratch_operands)]
        block = (32 * first.num_warps, 1, 1)
        n_outputs = len(self.specs) + len(scratch_specs)
        launcher = launcher_for(len(arrays), n_outputs)
        images = {cc: c.image for cc, c in compiled.items()}
        layout = repr((grid, block, [(p.kind, p.value, p.size) for p in params], first.cooperative))
        shared = [f"{cc}:{image.shared_mem}" for cc, image in images.items()]
        kernel_id = content_id("triton", first.entry, layout, *shared, *(i.code for i in images.values()))
        n_operands, coop = len(arrays) + n_outputs, first.cooperative
        register(launcher, kernel_id, first.entry, grid, block, params, n_operands, images, cooperative=coop)
        specs = [*self.specs, *scratch_specs]
        results = call_target(
            launcher.target, arrays, specs, **self.call_options, kernel_id=np.int64(kernel_id)
        )
        return jax.tree_util.tree_unflatten(self.treedef, results[: len(self.specs)])


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
    capabilities = None
    if compute_capability is not None:
        values = compute_capability if isinstance(compute_capability, (list, tuple)) else [compute_capability]
        from ..toolchain.cuda_arch import one_arch

        capabilities = sorted({one_arch(v).cc for v in values})
    # The grid and sizes are fixed when the kernel is made, so a launch cannot cover a
    # batch axis: under vmap it runs once per batch element (as numba_cuda_kernel does).
    from ..launchers.launch_config import RANK_CHANGING

    vmap = "sequential" if vmap_method in RANK_CHANGING else vmap_method
    aliases = dict(input_output_aliases) if input_output_aliases else None
    call_options = {"vmap_method": vmap, "input_output_aliases": aliases}
    return TritonCall(kernel, outs, grid, dict(params), options, capabilities, call_options)
