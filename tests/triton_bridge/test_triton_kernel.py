"""brainevent.triton_kernel without a GPU: argument checks, how parameters are laid out, Triton's
compiler run for an explicit architecture, and the custom call a CUDA lowering emits (with the
launcher built by nvcc). Running the kernels is tests/custom_kernel/test_custom_kernel_gpu_backends.py."""

from __future__ import annotations

import re
import struct
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent.custom_kernel import XLACustomKernel
from brainevent.errors import KernelCallError
from brainevent.launchers.cubin import NULL, OPERAND, SCALAR, SCRATCH, Param, scalar
from brainevent.toolchain.cuda_arch import one_arch
from brainevent.triton_bridge.triton_call import scalar_bytes, scalar_type, trailing_params

SPEC = jax.ShapeDtypeStruct((4096,), jnp.float32)


# -- pure Python: capabilities, scalars, trailing parameters -------------------------------------


@pytest.mark.parametrize(
    ("value", "cc"), [(90, 90), ("90", 90), ("9.0", 90), ("sm_90a", 90), ("sm_120", 120)]
)
def test_compute_capability_spellings(value: Any, cc: int) -> None:
    assert one_arch(value).cc == cc


@pytest.mark.parametrize("value", ["hopper", "sm_", 7, "4.12"])
def test_bad_compute_capability_names_the_value(value: Any) -> None:
    with pytest.raises(KernelCallError, match=re.escape(repr(value))):
        one_arch(value)


@pytest.mark.parametrize(
    ("value", "annotation", "ty", "packed"),
    [
        (-5, "", "i32", struct.pack("<i", -5)),
        (2**40, "", "i64", struct.pack("<q", 2**40)),
        (2**63 + 1, "", "u64", struct.pack("<Q", 2**63 + 1)),
        (2.5, "", "fp32", struct.pack("<f", 2.5)),
        (True, "", "i1", b"\x01"),
        (np.float64(0.25), "", "fp64", struct.pack("<d", 0.25)),
        (np.int16(-3), "", "i16", struct.pack("<h", -3)),
        (3, "fp16", "fp16", struct.pack("<e", 3.0)),
        (1.5, "bf16", "bf16", struct.pack("<H", 0x3FC0)),
    ],
)
def test_scalars_are_typed_as_triton_does_and_passed_as_their_bits(
    value: Any, annotation: str, ty: str, packed: bytes
) -> None:
    assert scalar_type("p", value, annotation) == ty
    param = scalar(scalar_bytes(ty, value))
    assert param.size == len(packed)
    assert (param.value & ((1 << (8 * param.size)) - 1)).to_bytes(param.size, "little") == packed


@pytest.mark.parametrize(
    ("value", "match"), [(2**64, "does not fit in 64 bits"), ("3", "got str"), (None, "NoneType")]
)
def test_a_scalar_that_is_not_a_number_is_refused(value: Any, match: str) -> None:
    with pytest.raises(KernelCallError, match=match):
        scalar_type("p", value, "")


@pytest.mark.parametrize(("ty", "value"), [("i32", 2.5), ("u64", "7"), ("fp8e5", 1.0)])
def test_a_scalar_that_its_type_cannot_hold_is_refused(ty: str, value: Any) -> None:
    with pytest.raises(KernelCallError, match=re.escape(ty)):
        scalar_bytes(ty, value)


def test_trailing_scratch_parameters_follow_the_ptx_entry() -> None:
    from brainevent.launchers.cubin import Image
    from brainevent.triton_bridge.triton_call import Compiled

    compiled = Compiled(
        "k", Image(b"", 0), n_ptx_params=6, num_warps=4, scratch=((64, 128), (0, 1)), cooperative=False
    )
    assert trailing_params(compiled, 4, [3, None]) == [Param(SCRATCH, 3, 128), Param(NULL)]
    with pytest.raises(Exception, match="calling convention is not one brainevent knows"):
        trailing_params(compiled, 3, [3, None])  # three pointers beyond ours: unknown


# -- with Triton --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kernels() -> dict[str, Any]:
    triton = pytest.importorskip("triton", reason="needs triton (pip install triton)")
    tl = pytest.importorskip("triton.language")

    @triton.jit
    def axpy(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, alpha * x + y, mask=mask)

    @triton.jit
    def with_default(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 256):  # type: ignore[no-untyped-def]
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)

    @triton.autotune(configs=[triton.Config({"BLOCK": 128})], key=["n"])
    @triton.jit
    def tuned(x_ptr, out_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)

    return {"triton": triton, "axpy": axpy, "with_default": with_default, "tuned": tuned}


def axpy_call(kernels: dict[str, Any], **overrides: Any) -> Any:
    params = {"n": 4096, "alpha": 2.0, "BLOCK": 1024, "compute_capability": "sm_90", **overrides}
    return brainevent.triton_kernel(
        kernels["axpy"], SPEC, grid=lambda meta: (kernels["triton"].cdiv(meta["n"], meta["BLOCK"]),), **params
    )


def test_triton_kernel_checks_its_arguments(kernels: dict[str, Any]) -> None:
    def plain(x_ptr: Any) -> None: ...

    with pytest.raises(KernelCallError, match=r"needs a @triton.jit function, got function 'plain'"):
        brainevent.triton_kernel(plain, SPEC, grid=1)
    with pytest.raises(KernelCallError, match="autotuned or heuristic kernels are not supported"):
        brainevent.triton_kernel(kernels["tuned"], SPEC, grid=1)
    with pytest.raises(KernelCallError, match="num_warps must be a power of two up to 32, got 3"):
        brainevent.triton_kernel(kernels["axpy"], SPEC, grid=1, num_warps=3)
    with pytest.raises(KernelCallError, match=r"grid must be 1 to 3 non-negative ints .*got \(1, 2, 3, 4\)"):
        brainevent.triton_kernel(kernels["axpy"], SPEC, grid=(1, 2, 3, 4))
    with pytest.raises(KernelCallError, match=r"grid must be .*got -1"):
        brainevent.triton_kernel(kernels["axpy"], SPEC, grid=-1)


@pytest.mark.parametrize(
    ("kernel", "n_inputs", "params", "match"),
    [
        (
            "axpy",
            2,
            {"n": 8, "alpha": object(), "BLOCK": 8},
            r"'alpha' must be a Python or NumPy number.*object",
        ),
        (
            "axpy",
            2,
            {"n": 8, "alpha": 1.0, "BLOCK": 8, "beta": 1},
            r"no parameter\(s\) \['beta'\] after its 3",
        ),
        ("axpy", 5, {}, r"parameter 'BLOCK' receives array 5, but it is a tl.constexpr"),
        ("with_default", 4, {}, r"takes 4 parameter\(s\), but the call passes 4 input\(s\) and 1 output"),
        ("axpy", 2, {"alpha": 1.0, "BLOCK": 8}, r"parameter 'n' has no value; pass n=\.\.\."),
    ],
)
def test_parameters_are_bound_by_position_then_by_name(
    kernels: dict[str, Any], kernel: str, n_inputs: int, params: dict[str, Any], match: str
) -> None:
    f = brainevent.triton_kernel(kernels[kernel], SPEC, grid=4, compute_capability=90, **params)
    with pytest.raises(KernelCallError, match=match):
        jax.jit(f).trace(*[SPEC] * n_inputs)


def test_an_unsupported_dtype_is_named(kernels: dict[str, Any]) -> None:
    g = axpy_call(kernels)
    complex_spec = jax.ShapeDtypeStruct((4096,), jnp.complex64)
    with pytest.raises(KernelCallError, match="cannot take arrays of dtype complex64"):
        jax.jit(g).trace(complex_spec, SPEC)


def test_compiled_for_an_explicit_architecture_without_a_gpu(kernels: dict[str, Any]) -> None:
    from brainevent.triton_bridge.triton_call import bind, compile_for

    bound = bind(kernels["axpy"], [np.float32] * 2, [np.float32], {"n": 4096, "alpha": 2.0, "BLOCK": 1024})
    assert bound.signature == {
        "x_ptr": "*fp32",
        "y_ptr": "*fp32",
        "out_ptr": "*fp32",
        "n": "i32",
        "alpha": "fp32",
        "BLOCK": "constexpr",
    }
    assert [p.kind for p in bound.params] == [OPERAND, OPERAND, OPERAND, SCALAR, SCALAR]
    assert bound.attrs[(3,)] == [["tt.divisibility", 16]]  # 4096 is a multiple of 16
    compiled = compile_for(kernels["axpy"], bound, 90, {"num_warps": 4, "num_stages": 3})
    assert compiled.entry == "axpy" and compiled.num_warps == 4
    assert compiled.image.code[:4] == b"\x7fELF"  # a cubin
    assert compiled.n_ptx_params - len(bound.params) in (0, 1, 2)  # Triton's trailing scratch pointers
    defaulted = bind(kernels["with_default"], [np.float32], [np.float32], {"n": 100})
    assert defaulted.constexprs == {"BLOCK": 256} and "n" not in bound.attrs


@pytest.mark.nvcc
def test_a_cuda_lowering_emits_one_launch_with_a_content_id(kernels: dict[str, Any]) -> None:
    def lowered(f: Any) -> str:
        return str(jax.jit(f).trace(SPEC, SPEC).lower(lowering_platforms=("cuda",)).as_text())

    text = lowered(axpy_call(kernels))
    calls = re.findall(r"stablehlo.custom_call @([\w.]+)\(.*kernel_id = (\d+)", text)
    assert len(calls) == 1 and calls[0][0] == "brainevent_cubin.launch"
    assert re.findall(r"kernel_id = (\d+)", lowered(axpy_call(kernels))) == [calls[0][1]]  # same content
    changed = re.findall(r"kernel_id = (\d+)", lowered(axpy_call(kernels, alpha=3.0)))
    assert changed and changed != [calls[0][1]]


@pytest.mark.nvcc
def test_def_triton_kernel_lowers_inside_the_primitive(kernels: dict[str, Any]) -> None:
    triton = kernels["triton"]

    def generator(outs: Any, alpha: float = 2.0) -> Any:
        n = outs[0].shape[0]
        return brainevent.triton_kernel(
            kernels["axpy"],
            outs,
            grid=(triton.cdiv(n, 1024),),
            n=n,
            alpha=alpha,
            BLOCK=1024,
            compute_capability=90,
        )

    op = XLACustomKernel(
        "triton_axpy_lowering", outs=lambda x, y, **_: jax.ShapeDtypeStruct(x.shape, x.dtype)
    )
    op.def_triton_kernel(generator)
    text = str(
        jax.jit(lambda x, y: op(x, y, alpha=0.5))
        .trace(SPEC, SPEC)
        .lower(lowering_platforms=("cuda",))
        .as_text()
    )
    assert "brainevent_cubin.launch" in text
    with pytest.raises(KernelCallError, match=r"no kernel for platform 'cpu' \(it has kernels for: gpu\)"):
        op(np.ones(4096, np.float32), np.ones(4096, np.float32))
