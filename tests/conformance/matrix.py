"""The conformance matrix: every kernel kind under every transformation it claims.

Run as a script in a process of its own (the host device count is fixed when JAX starts):

    python matrix.py run <platform> <out.json> <export dir>
    python matrix.py replay <platform> <out.json> <export dir>

``run`` computes every cell and writes ``{kind: {cell: outcome}}``; ``replay`` deserializes
what ``run`` exported and runs it in a fresh process (a kind that declares batch dims also
replays a call exported with sharded inputs, which must still run on the local shards). An
outcome is ``"ok"``, ``"wrong: ..."`` (a result that differs from NumPy), ``"refused: <error
type>: ..."`` (a cell the kind does not support, refused with an error of ours) or ``"error:
<error type>: ..."``. Every kernel computes ``out = 0.5 * x + w`` with ``w`` broadcast over
leading axes, so each cell has one NumPy reference. Rows that declare batch dims in every cell
use a kernel that requires ``x``, ``w`` and ``out`` of one size (``step_rows``): their kernel
is promised operands that share the batch dims, so ``vmap`` of an unbatched ``w`` must reach
it broadcast.
"""

from __future__ import annotations

import copy
import functools
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

N_DEVICES = 4
ROWS, COLS = 8, 4
BATCH = 4  # Pallas's Triton lowering needs power-of-two sizes
VMAP_FFI = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all")
VMAP_PRIMITIVE = ("sequential", "expand_dims", "broadcast_all")

CPP = r"""
#include "brainevent/common.h"
// @BE step arg arg ret
void step(const BE::Tensor x, const BE::Tensor w, BE::Tensor out) {
  const float* px = x.data_ptr<float>();
  const float* pw = w.data_ptr<float>();
  float* po = out.data_ptr<float>();
  const int64_t nw = w.numel();
  BE_CHECK(out.numel() == x.numel()) << "out has " << out.numel() << " elements, x has " << x.numel();
  for (int64_t i = 0; i < x.numel(); ++i) po[i] = 0.5f * px[i] + pw[i % nw];
}
// The same for a call with batch dims, whose operands share their size: it reads w as far as x.
// @BE step_rows arg arg ret
void step_rows(const BE::Tensor x, const BE::Tensor w, BE::Tensor out) {
  BE_CHECK(w.numel() == x.numel() && out.numel() == x.numel())
      << "x has " << x.numel() << " elements, w " << w.numel() << ", out " << out.numel();
  for (int64_t i = 0; i < x.numel(); ++i) {
    out.data_ptr<float>()[i] = 0.5f * x.data_ptr<float>()[i] + w.data_ptr<float>()[i];
  }
}
"""

CUDA = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"
__global__ void step_kernel(const float* x, const float* w, float* out, int64_t n, int64_t nw) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = 0.5f * x[i] + w[i % nw];
}
// @BE step arg arg ret stream
void step(const BE::Tensor x, const BE::Tensor w, BE::Tensor out, int64_t stream) {
  int64_t n = x.numel();
  if (n == 0) return;
  step_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
      x.data_ptr<float>(), w.data_ptr<float>(), out.data_ptr<float>(), n, w.numel());
  BE_CHECK_KERNEL_LAUNCH();
}
// @BE step_rows arg arg ret stream
void step_rows(const BE::Tensor x, const BE::Tensor w, BE::Tensor out, int64_t stream) {
  BE_CHECK(w.numel() == x.numel() && out.numel() == x.numel())
      << "x has " << x.numel() << " elements, w " << w.numel() << ", out " << out.numel();
  step(x, w, out, stream);
}
"""


# The same step for NVRTC (brainevent.cuda_kernel): device code only, sizes bound per call.
NVRTC_STEP = r"""
extern "C" __global__ void step(const float* x, const float* w, float* out, long long n, long long nw) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = 0.5f * x[i] + w[i % nw];
}
"""


def spec_like(x: Any) -> Any:
    import jax

    return jax.ShapeDtypeStruct(x.shape, x.dtype)


# -- kernel kinds ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    """A way to write a kernel. ``make(vmap_method, num_batch_dims)`` returns ``f(x, w)``."""

    name: str
    platform: str  # "cpu" or "gpu"
    make: Callable[[str | None, int | None], Callable[[Any, Any], Any]]
    vmap_methods: tuple[str, ...]
    differentiable: bool  # has a JVP rule (an XLACustomKernel with def_jvp_rule)
    batch_dims: bool  # can declare batch dims (XLACustomKernel(num_batch_dims=k))
    needs: str | None = None  # a module that must be importable
    # Declared batch dims split the call across devices. Generator backends (Pallas, Triton
    # through a generator) are traced JAX code that XLA partitions as it can: the result is
    # right, but the inputs may be gathered first.
    partitions: bool = True
    # Its kernel is registered when a call is lowered (an XLACustomKernel backend that compiles
    # at lowering: Numba, Numba-CUDA, NVRTC), not when its module loads or the call is traced.
    registered_when_lowered: bool = False
    # Its calls carry their compiled kernel (NVRTC): the exported program also replays in a
    # process that never traced it (``export_replay_self_contained``).
    self_contained: bool = False


def _module(platform: str) -> Any:
    import brainevent

    if platform == "cpu":
        return brainevent.load_cpp_inline(name="conformance_cpu", cpp_sources=CPP)
    return brainevent.load_cuda_inline(name="conformance_cuda", cuda_sources=CUDA)


def module_kind(
    platform: str, function: str = "step"
) -> Callable[[str | None, int | None], Callable[[Any, Any], Any]]:
    def make(vmap_method: str | None, num_batch_dims: int | None) -> Callable[[Any, Any], Any]:
        step = copy.copy(getattr(_module(platform), function))
        step.vmap_method = vmap_method
        step.num_batch_dims = num_batch_dims
        return step  # type: ignore[no-any-return]

    return make


def batched_module_kind(platform: str) -> Callable[[str | None, int | None], Callable[[Any, Any], Any]]:
    """A module function that declares one batch dim, in every cell (not only sharded jit)."""
    return with_batch_dim(module_kind(platform, "step_rows"))


def raw_ffi_kind(vmap_method: str | None, num_batch_dims: int | None) -> Callable[[Any, Any], Any]:
    """A target called by name through ``brainevent.ffi_call``, JAX's signature."""
    import brainevent

    target = _module("cpu").targets["step"]
    return lambda x, w: brainevent.ffi_call(target, spec_like(x), vmap_method=vmap_method)(x, w)


def _numba_cpu_step() -> Any:
    import numba

    @numba.njit
    def step(x: Any, w: Any, out: Any) -> None:
        xf, wf, of = x.ravel(), w.ravel(), out.ravel()
        for i in range(xf.size):
            of[i] = 0.5 * xf[i] + wf[i % wf.size]

    return step


def _numba_cpu_step_rows() -> Any:
    import numba

    @numba.njit
    def step_rows(x: Any, w: Any, out: Any) -> None:
        if w.size != x.size or out.size != x.size:
            raise ValueError("x, w and out differ in size")
        xf, wf, of = x.ravel(), w.ravel(), out.ravel()
        for i in range(xf.size):
            of[i] = 0.5 * xf[i] + wf[i]

    return step_rows


def numba_kind(vmap_method: str | None, num_batch_dims: int | None) -> Callable[[Any, Any], Any]:
    import brainevent

    step = _numba_cpu_step()

    def f(x: Any, w: Any) -> Any:
        return brainevent.numba_kernel(step, spec_like(x), vmap_method=vmap_method)(x, w)

    return f


def _numba_cuda_flat() -> Any:
    from numba import cuda

    @cuda.jit
    def step(x: Any, w: Any, out: Any) -> None:
        i = cuda.grid(1)
        if i < out.size:
            out[i] = 0.5 * x[i] + w[i % w.size]

    return step


def _numba_cuda_2d() -> Any:
    from numba import cuda

    @cuda.jit
    def step(x: Any, w: Any, out: Any) -> None:
        i, j = cuda.grid(2)
        if i < out.shape[0] and j < out.shape[1]:
            out[i, j] = 0.5 * x[i, j] + w[i % w.shape[0], j]

    return step


def numba_cuda_kind(vmap_method: str | None, num_batch_dims: int | None) -> Callable[[Any, Any], Any]:
    import brainevent

    step = _numba_cuda_2d()

    def f(x: Any, w: Any) -> Any:
        call = brainevent.numba_cuda_kernel(
            step, spec_like(x), launch_dims=x.shape[-2:], vmap_method=vmap_method
        )
        return call(x, w)

    return f


def numba_cuda_callable_kind(
    vmap_method: str | None, num_batch_dims: int | None
) -> Callable[[Any, Any], Any]:
    import brainevent

    step = _numba_cuda_flat()

    def launch(x: Any, w: Any, out: Any, stream: Any) -> None:
        # The host side sees whole arrays of any rank (a batch axis under vmap): the kernel
        # takes them flat.
        step[(out.size + 127) // 128, 128, stream](x.ravel(), w.ravel(), out.ravel())

    def f(x: Any, w: Any) -> Any:
        return brainevent.numba_cuda_callable(launch, spec_like(x), vmap_method=vmap_method)(x, w)

    return f


def _triton_step() -> Any:
    import triton
    import triton.language as tl

    # No annotations on the parameters: Triton reads them as the parameters' types.
    @triton.jit
    def step(x_ptr, w_ptr, out_ptr, n, nw, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        w = tl.load(w_ptr + offsets % nw, mask=mask)
        tl.store(out_ptr + offsets, 0.5 * x + w, mask=mask)

    return step


def _triton_call(x: Any, w: Any, outs: Any, vmap_method: str | None) -> Any:
    import brainevent

    n, nw = int(np.prod(outs.shape)), int(np.prod(w.shape))
    call = brainevent.triton_kernel(
        _triton_step(), outs, grid=((n + 127) // 128,), n=n, nw=nw, BLOCK=128, vmap_method=vmap_method
    )
    return call(x, w)


def triton_kind(vmap_method: str | None, num_batch_dims: int | None) -> Callable[[Any, Any], Any]:
    return lambda x, w: _triton_call(x, w, spec_like(x), vmap_method)


def nvrtc_kind(vmap_method: str | None, num_batch_dims: int | None) -> Callable[[Any, Any], Any]:
    import brainevent

    def f(x: Any, w: Any) -> Any:
        call = brainevent.cuda_kernel(
            NVRTC_STEP,
            "step",
            spec_like(x),
            launch_dims=lambda x, w: x.size,
            vmap_method=vmap_method,
            num_batch_dims=num_batch_dims,
            n=lambda x, w: x.size,
            nw=lambda x, w: w.size,
        )
        return call(x, w)

    return f


def with_batch_dim(
    make: Callable[[str | None, int | None], Callable[[Any, Any], Any]],
) -> Callable[[str | None, int | None], Callable[[Any, Any], Any]]:
    """A kind that declares one batch dim in every cell (not only sharded jit)."""
    return lambda vmap_method, num_batch_dims: make(vmap_method, 1)


def _pallas(outs: Any, interpret: bool) -> Any:
    from jax.experimental import pallas as pl

    def kernel(x_ref: Any, w_ref: Any, o_ref: Any) -> None:
        o_ref[...] = 0.5 * x_ref[...] + w_ref[...]

    return pl.pallas_call(kernel, out_shape=outs[0], interpret=interpret)


def _warp_generator() -> Callable[..., Any]:
    import warp as wp

    wp.config.log_level = wp.LOG_WARNING

    @wp.kernel
    def step(
        x: wp.array2d(dtype=wp.float32), w: wp.array2d(dtype=wp.float32), out: wp.array2d(dtype=wp.float32)
    ):  # type: ignore[valid-type]
        i, j = wp.tid()
        out[i, j] = 0.5 * x[i, j] + w[i % w.shape[0], j]

    def generator(outs: Any, **_: Any) -> Any:
        return wp.jax_kernel(step, num_outputs=1)

    return generator


def primitive_kind(
    backend: str, rows: bool = False
) -> Callable[[str | None, int | None], Callable[[Any, Any], Any]]:
    """An XLACustomKernel with one backend, a JVP rule, and the given batching and batch dims;
    ``rows``: its kernel requires operands of one size (``step_rows``, for batch dims)."""

    def make(vmap_method: str | None, num_batch_dims: int | None) -> Callable[[Any, Any], Any]:
        import brainevent

        name = f"conformance_{backend}_{vmap_method}_{num_batch_dims}{'_rows' if rows else ''}"
        op = brainevent.XLACustomKernel(
            name, vmap_method=vmap_method or "sequential", num_batch_dims=num_batch_dims
        )
        function = "step_rows" if rows else "step"
        if backend == "cpp":
            op.def_kernel("cpu", getattr(_module("cpu"), function))
        elif backend == "cuda_raw":
            op.def_kernel("gpu", getattr(_module("gpu"), function))
        elif backend == "numba":
            op.def_numba_kernel(_numba_cpu_step_rows() if rows else _numba_cpu_step())
        elif backend == "numba_cuda":
            op.def_numba_cuda_kernel(_numba_cuda_2d(), launch_dims=lambda ins, outs: outs[0].shape)
        elif backend == "nvrtc":
            # Flat over whatever ranks the call has, so batching that adds an axis works too.
            op.def_cuda_kernel(
                NVRTC_STEP,
                "step",
                launch_dims=lambda ins, outs: outs[0].size,
                n=lambda ins, outs: outs[0].size,
                nw=lambda ins, outs: ins[1].size,
            )
        elif backend == "pallas_interpret":
            op.def_kernel("pallas", "cpu", lambda outs, **_: _pallas(outs, interpret=True))
        elif backend == "pallas":
            op.def_pallas_kernel("gpu", lambda outs, **_: _pallas(outs, interpret=False))
        elif backend in ("warp", "warp_cpu"):
            op.def_warp_kernel(_warp_generator(), platform="cpu" if backend == "warp_cpu" else "gpu")
        elif backend == "triton":
            op.def_triton_kernel(lambda outs, **_: lambda x, w: _triton_call(x, w, outs[0], None))
        else:
            raise ValueError(backend)

        @op.def_jvp_rule
        def jvp(primals: Any, tangents: Any, *, outs: Any, **attrs: Any) -> Any:
            x, w = primals
            dx, dw = tangents
            return [op(x, w, outs=outs[0])], [0.5 * dx + dw]

        return lambda x, w: op(x, w, outs=spec_like(x))

    return make


KINDS = (
    Kind("cpp_module", "cpu", module_kind("cpu"), VMAP_FFI, False, True),
    Kind("cpp_module_batch_dims", "cpu", batched_module_kind("cpu"), VMAP_FFI, False, True),
    Kind("raw_ffi_call", "cpu", raw_ffi_kind, VMAP_FFI, False, False),
    Kind("numba_kernel", "cpu", numba_kind, VMAP_FFI, False, False, needs="numba"),
    Kind("xla_cpp", "cpu", primitive_kind("cpp"), VMAP_PRIMITIVE, True, True),
    Kind(
        "xla_cpp_batch_dims",
        "cpu",
        with_batch_dim(primitive_kind("cpp", rows=True)),
        VMAP_PRIMITIVE,
        True,
        True,
    ),
    Kind(
        "xla_numba",
        "cpu",
        primitive_kind("numba"),
        VMAP_PRIMITIVE,
        True,
        True,
        needs="numba",
        registered_when_lowered=True,
    ),
    Kind(
        "xla_numba_batch_dims",
        "cpu",
        with_batch_dim(primitive_kind("numba", rows=True)),
        VMAP_PRIMITIVE,
        True,
        True,
        needs="numba",
        registered_when_lowered=True,
    ),
    Kind(
        "xla_pallas_interpret",
        "cpu",
        primitive_kind("pallas_interpret"),
        VMAP_PRIMITIVE,
        True,
        True,
        partitions=False,
    ),
    # A Warp kernel is typed for its arrays' ranks, as a Numba-CUDA one is: "sequential" only.
    Kind(
        "xla_warp_cpu",
        "cpu",
        primitive_kind("warp_cpu"),
        ("sequential",),
        True,
        True,
        needs="warp",
        partitions=False,
    ),
    Kind("cuda_module", "gpu", module_kind("gpu"), VMAP_FFI, False, True),
    Kind("cuda_module_batch_dims", "gpu", batched_module_kind("gpu"), VMAP_FFI, False, True),
    Kind("numba_cuda_kernel", "gpu", numba_cuda_kind, VMAP_FFI, False, False, needs="numba.cuda"),
    Kind("numba_cuda_callable", "gpu", numba_cuda_callable_kind, VMAP_FFI, False, False, needs="numba.cuda"),
    Kind("triton_kernel", "gpu", triton_kind, VMAP_FFI, False, False, needs="triton"),
    Kind("nvrtc_cuda_kernel", "gpu", nvrtc_kind, VMAP_FFI, False, True, self_contained=True),
    Kind(
        "nvrtc_cuda_kernel_batch_dims",
        "gpu",
        with_batch_dim(nvrtc_kind),
        VMAP_FFI,
        False,
        True,
        self_contained=True,
    ),
    Kind("xla_cuda_raw", "gpu", primitive_kind("cuda_raw"), VMAP_PRIMITIVE, True, True),
    Kind(
        "xla_cuda_raw_batch_dims",
        "gpu",
        with_batch_dim(primitive_kind("cuda_raw", rows=True)),
        VMAP_PRIMITIVE,
        True,
        True,
    ),
    # A Numba-CUDA kernel is typed for its operands' ranks: batching that adds an axis to
    # them would need another kernel, so this row claims "sequential" only.
    Kind(
        "xla_numba_cuda",
        "gpu",
        primitive_kind("numba_cuda"),
        ("sequential",),
        True,
        True,
        needs="numba.cuda",
        registered_when_lowered=True,
    ),
    # Its sizes are scalars bound when the call is lowered. With batch dims they are those of one
    # batch element (the rows here), and the launcher runs the kernel per element of each call,
    # so a call split across devices stays right.
    Kind(
        "xla_nvrtc",
        "gpu",
        primitive_kind("nvrtc"),
        VMAP_PRIMITIVE,
        True,
        True,
        registered_when_lowered=True,
        self_contained=True,
    ),
    Kind(
        "xla_nvrtc_batch_dims",
        "gpu",
        with_batch_dim(primitive_kind("nvrtc")),
        VMAP_PRIMITIVE,
        True,
        True,
        registered_when_lowered=True,
    ),
    Kind("xla_pallas", "gpu", primitive_kind("pallas"), VMAP_PRIMITIVE, True, True, partitions=False),
    Kind(
        "xla_triton",
        "gpu",
        primitive_kind("triton"),
        VMAP_PRIMITIVE,
        True,
        True,
        needs="triton",
        partitions=False,
    ),
)


# -- cells -------------------------------------------------------------------------------------

LOOPS = ("fori_loop", "scan", "while_loop", "cond")

# Cells a kind does not support, and the words of the error the user gets there.
UNSUPPORTED = {
    # A Python launch function has no identity another process could find it by.
    ("numba_cuda_callable", "export_replay"): "executables from another process cannot be reused",
    # Warp registers its kernels under per-process names that JAX does not know to be stable.
    **{
        (kind, cell): words
        for kind in ("xla_warp_cpu", "xla_warp")
        for cell, words in (
            ("export", "Cannot serialize code with custom calls"),
            ("export_replay", "not exported"),
        )
    },
}


def replays_sharded(kind: Kind) -> bool:
    """Whether the row exports a call with sharded inputs, to be replayed on the local shards."""
    return kind.batch_dims and kind.partitions


def replay_cells(kind: Kind) -> list[str]:
    """The cells computed in the fresh process, the sharded one first (the plain one lowers a
    call, which must not be what makes the sharded replay partition); a self-contained replay
    runs before anything in that process traces a kernel."""
    return [
        *(["export_replay_self_contained"] if kind.self_contained else []),
        *(["export_replay_sharded"] if replays_sharded(kind) else []),
        "export_replay",
    ]


def cell_names(kind: Kind) -> list[str]:
    """Every cell of ``kind``'s row, in the order :func:`run` builds them."""
    return [
        "eager",
        "jit",
        "lower_compile",
        *(f"vmap_{m}" for m in kind.vmap_methods),
        "grad",
        *LOOPS,
        "shard_map",
        *(f"shard_map_{loop}" for loop in LOOPS),
        "sharded_jit",
        "export",
        *(["export_sharded"] if replays_sharded(kind) else []),
    ]


def reference(x: Any, w: Any) -> np.ndarray:
    return 0.5 * np.asarray(x, np.float32) + np.asarray(w, np.float32)


def data() -> tuple[np.ndarray, np.ndarray]:
    x = np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS) / 7
    w = np.linspace(-1, 1, ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS)
    return x, w


def loop_cells(
    f: Callable[[Any, Any], Any],
) -> dict[str, tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]]:
    """Control flow around the kernel, each with its NumPy reference: ``(jax fn, numpy fn)``."""
    import jax

    def twice(x: Any, w: Any) -> Any:
        return reference(reference(x, w), w)

    return {
        "fori_loop": (lambda x, w: jax.lax.fori_loop(0, 2, lambda i, v: f(v, w), x), twice),
        "scan": (lambda x, w: jax.lax.scan(lambda c, _: (f(c, w), None), x, None, length=2)[0], twice),
        "while_loop": (
            lambda x, w: jax.lax.while_loop(lambda s: s[0] < 2, lambda s: (s[0] + 1, f(s[1], w)), (0, x))[1],
            twice,
        ),
        "cond": (lambda x, w: jax.lax.cond(x[0, 0] >= 0, f, lambda a, b: a, x, w), reference),
    }


def cells(kind: Kind, mesh: Any) -> dict[str, Callable[[], str]]:
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    x, w = data()
    f = kind.make("sequential" if kind.vmap_methods else None, None)
    out: dict[str, Callable[[], str]] = {}

    def check(got: Any, want: Any) -> str:
        got = np.asarray(got)
        if got.shape != np.shape(want) or not np.allclose(got, want, rtol=1e-5, atol=1e-5):
            return f"wrong: got {got.ravel()[:4]}... shape {got.shape}, want {np.ravel(want)[:4]}..."
        return "ok"

    out["eager"] = lambda: check(f(x, w), reference(x, w))
    out["jit"] = lambda: check(jax.jit(f)(x, w), reference(x, w))
    out["lower_compile"] = lambda: check(jax.jit(f).lower(x, w).compile()(x, w), reference(x, w))
    xs = np.stack([x + b for b in range(BATCH)])
    for method in kind.vmap_methods:
        g = kind.make(method, None)
        out[f"vmap_{method}"] = lambda g=g: check(
            jax.jit(jax.vmap(g, in_axes=(0, None)))(xs, w), reference(xs, w)
        )

    def grad() -> str:
        got = jax.jit(jax.grad(lambda x, w: f(x, w).sum(), argnums=(0, 1)))(x, w)
        return check(np.stack(got), np.stack([np.full_like(x, 0.5), np.ones_like(w)]))

    out["grad"] = grad
    for name, (jf, nf) in loop_cells(f).items():
        out[name] = lambda jf=jf, nf=nf: check(jax.jit(jf)(x, w), nf(x, w))

    # shard_map over every device, JAX's default checking of varying manual axes: x is split
    # by rows (varies), w is replicated (invariant) and enters every kernel call.
    row = NamedSharding(mesh, P("b"))
    whole = NamedSharding(mesh, P())
    wtile = np.tile(w[: ROWS // N_DEVICES], (N_DEVICES, 1))
    xw_tiled = (jax.device_put(x, row), jax.device_put(w[: ROWS // N_DEVICES], whole))

    def sharded(body: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P("b"), P()), out_specs=P("b")))

    out["shard_map"] = lambda: check(sharded(f)(*xw_tiled), reference(x, wtile))
    for name, (jf, nf) in loop_cells(f).items():
        out[f"shard_map_{name}"] = lambda jf=jf, nf=nf: check(sharded(jf)(*xw_tiled), _per_shard(nf, x, w))

    def sharded_jit() -> str:
        # Both operands sharded by rows. A kind that declares batch dims must run on the local
        # shards (no all-gather); any other must still compute the right result.
        g = kind.make("sequential", 1) if kind.batch_dims else f
        a, b = jax.device_put(x, row), jax.device_put(w, row)
        jitted = jax.jit(g)
        verdict = check(jitted(a, b), reference(x, w))
        gathered = "all-gather" in jitted.lower(a, b).compile().as_text()
        if verdict == "ok" and kind.batch_dims and kind.partitions and gathered:
            return "wrong: declared batch dims but the call gathered its inputs"
        return verdict

    out["sharded_jit"] = sharded_jit
    return out


def row_sharded(mesh: Any, x: np.ndarray, w: np.ndarray) -> tuple[Any, Any]:
    """``x`` and ``w`` split by rows over the mesh, as the sharded cells take them."""
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    row = NamedSharding(mesh, P("b"))
    return jax.device_put(x, row), jax.device_put(w, row)


def partitioned(jitted: Any, a: Any, b: Any) -> str:
    """``jitted(a, b)`` checked against NumPy, and its program checked for an all-gather (a call
    that declares batch dims runs on the local shards)."""
    got = np.asarray(jitted(a, b))
    want = reference(np.asarray(a), np.asarray(b))
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-5):
        return f"wrong: got {got.ravel()[:4]}..., want {want.ravel()[:4]}..."
    if "all-gather" in jitted.lower(a, b).compile().as_text():
        return "wrong: declared batch dims but the call gathered its inputs"
    return "ok"


def _per_shard(nf: Callable[[Any, Any], Any], x: np.ndarray, w: np.ndarray) -> np.ndarray:
    rows = ROWS // N_DEVICES
    wl = w[:rows]
    return np.concatenate([nf(x[i * rows : (i + 1) * rows], wl) for i in range(N_DEVICES)])


def outcome(cell: Callable[[], str]) -> str:
    try:
        return cell()
    except Exception as exc:  # recorded, not raised: the test asserts each cell
        message = " ".join(str(exc).split())[:600]
        ours = type(exc).__module__.startswith("brainevent")
        return f"{'refused' if ours else 'error'}: {type(exc).__name__}: {message}"


def selected(platform: str) -> list[Kind]:
    import importlib.util

    chosen = []
    for kind in KINDS:
        if kind.platform != platform:
            continue
        if kind.needs and importlib.util.find_spec(kind.needs.split(".")[0]) is None:
            continue
        chosen.append(kind)
    return chosen


def run(platform: str, out_path: Path, export_dir: Path) -> None:
    import jax

    global N_DEVICES
    devices = jax.devices(platform)
    N_DEVICES = min(N_DEVICES, len(devices))  # 4 host devices; as many GPUs as there are, up to 4
    mesh = jax.make_mesh((N_DEVICES,), ("b",), devices=devices[:N_DEVICES])
    results: dict[str, dict[str, str]] = {"_devices": {"count": str(N_DEVICES)}}
    x, w = data()
    for kind in selected(platform):
        found = {name: outcome(cell) for name, cell in cells(kind, mesh).items()}
        found["export"] = outcome(lambda kind=kind: export(kind, x, w, export_dir))
        if replays_sharded(kind):
            found["export_sharded"] = outcome(functools.partial(export_sharded, kind, mesh, x, w, export_dir))
        assert list(found) == cell_names(kind), (list(found), cell_names(kind))
        results[kind.name] = found
    out_path.write_text(json.dumps(results, indent=1))


def export(kind: Kind, x: np.ndarray, w: np.ndarray, export_dir: Path) -> str:
    import jax
    from jax import export as jexport

    import brainevent

    f = kind.make("sequential" if kind.vmap_methods else None, None)
    jax.jit(f).lower(x, w)  # kernels traced once have registered their targets
    checks = brainevent.export_checks()
    if "pallas" in kind.name:  # JAX's own Triton call, which JAX does not promise to keep stable
        checks.append(jexport.DisabledSafetyCheck.custom_call("__gpu$xla.gpu.triton"))
    exported = jexport.export(jax.jit(f), disabled_checks=checks)(x, w)
    (export_dir / f"{kind.name}.bin").write_bytes(exported.serialize())
    return "ok"


def export_sharded(kind: Kind, mesh: Any, x: np.ndarray, w: np.ndarray, export_dir: Path) -> str:
    """The row's call with one batch dim, exported with both operands split by rows."""
    import jax
    from jax import export as jexport

    import brainevent

    jitted = jax.jit(kind.make("sequential", 1))
    a, b = row_sharded(mesh, x, w)
    verdict = partitioned(jitted, a, b)  # traces it: its kernels are registered
    exported = jexport.export(jitted, disabled_checks=brainevent.export_checks())(a, b)
    (export_dir / f"{kind.name}.sharded.bin").write_bytes(exported.serialize())
    return verdict


def replayed(kind: Kind, cell: str, blob: Path, mesh: Any) -> str:
    """One replay cell: make the kernels known as the docs' recipe does (loading a module
    registers its targets; a Numba or NVRTC kernel is registered when first traced, an
    XLACustomKernel's launcher backend when lowered), then run the deserialized program."""
    import jax
    from jax import export as jexport

    x, w = data()
    if cell == "export_replay_self_contained":
        # Nothing traced or compiled here: the program's calls carry their kernels.
        if any(name.startswith("brainevent.nvrtc") for name in sys.modules):
            return "error: a kernel was traced in this process before the self-contained replay"
        import brainevent

        call = jax.jit(brainevent.deserialize(blob.read_bytes()).call)
        return "ok" if np.allclose(np.asarray(call(x, w)), reference(x, w), rtol=1e-5) else "wrong"
    if cell == "export_replay_sharded":
        # The exported call itself, traced but lowered only where that is what registers its
        # kernel: nothing here may do what only lowering a batch-dims call used to do.
        g = kind.make("sequential", 1)
        if kind.registered_when_lowered:
            jax.jit(g).lower(x, w)
        else:
            jax.eval_shape(g, x, w)
        call = jax.jit(jexport.deserialize(bytearray(blob.read_bytes())).call)
        return partitioned(call, *row_sharded(mesh, x, w))
    jax.jit(kind.make("sequential" if kind.vmap_methods else None, None)).lower(x, w)
    call = jax.jit(jexport.deserialize(bytearray(blob.read_bytes())).call)
    return "ok" if np.allclose(np.asarray(call(x, w)), reference(x, w), rtol=1e-5) else "wrong"


def replay(platform: str, out_path: Path, export_dir: Path) -> None:
    """In a fresh process, run what ``run`` exported: ``{kind: {replay cell: outcome}}``."""
    import jax

    devices = jax.devices(platform)[:N_DEVICES]
    mesh = jax.make_mesh((len(devices),), ("b",), devices=devices)
    results: dict[str, dict[str, str]] = {kind.name: {} for kind in selected(platform)}
    # The self-contained replays first, before any cell traces a kernel in this process.
    first = [(k, c) for k in selected(platform) for c in replay_cells(k) if c.endswith("self_contained")]
    rest = [(k, c) for k in selected(platform) for c in replay_cells(k) if not c.endswith("self_contained")]
    for kind, cell in [*first, *rest]:
        blob = export_dir / f"{kind.name}{'.sharded' if cell.endswith('sharded') else ''}.bin"
        found = results[kind.name]
        found[cell] = (
            "error: not exported"
            if not blob.exists()
            else outcome(functools.partial(replayed, kind, cell, blob, mesh))
        )
    out_path.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    mode, platform_arg, out_arg, export_arg = sys.argv[1:5]
    {"run": run, "replay": replay}[mode](platform_arg, Path(out_arg), Path(export_arg))
