"""``brainevent.cuda_kernel`` without a GPU: what is checked when the function is made and
traced (kernel names, scalars, operands, launch settings), and that importing brainevent
leaves the NVRTC package alone."""

from __future__ import annotations

import struct
import subprocess
import sys

import numpy as np
import pytest

import brainevent
from brainevent.errors import KernelCallError

from .kernels import AXPY, BLOCK_SUM, VECTOR_ADD


def _spec(n: int = 8, dtype: object = np.float32) -> object:
    import jax

    return jax.ShapeDtypeStruct((n,), dtype)


def test_import_brainevent_does_not_import_the_nvrtc_package() -> None:
    code = "import sys, brainevent; print(any(m.startswith('brainevent.nvrtc') for m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
    assert brainevent.cuda_kernel is sys.modules["brainevent.nvrtc.kernel"].cuda_kernel


def test_an_unknown_kernel_name_lists_the_kernels_of_the_source() -> None:
    with pytest.raises(
        KernelCallError, match=r"no __global__ kernel named 'ad' in the inline source.*\['add'\]"
    ):
        brainevent.cuda_kernel(VECTOR_ADD, "ad", _spec(), launch_dims=8, n=8)


def test_scalars_are_checked_against_the_signature() -> None:
    with pytest.raises(KernelCallError, match=r"no scalar parameter 'm'.*parameters are \['n'\]") as caught:
        brainevent.cuda_kernel(VECTOR_ADD, "add", _spec(), launch_dims=8, m=8)
    assert caught.value.parameter == "m"
    fill = 'extern "C" __global__ void fill(float* out, float value, int count) {}'
    with pytest.raises(KernelCallError, match=r"no scalar parameter 'cout'.*Did you mean 'count'"):
        brainevent.cuda_kernel(fill, "fill", _spec(), launch_dims=8, value=1.0, cout=8)
    with pytest.raises(KernelCallError, match=r"needs a value for its scalar parameter\(s\) \['n'\]"):
        brainevent.cuda_kernel(VECTOR_ADD, "add", _spec(), launch_dims=8)
    with pytest.raises(KernelCallError, match=r"\['x'\] are pointer parameters"):
        brainevent.cuda_kernel(VECTOR_ADD, "add", _spec(), launch_dims=8, n=8, x=1)


def test_template_arguments_type_the_scalars() -> None:
    from brainevent.nvrtc.launch import KernelSource, signature_for

    source = KernelSource(AXPY, None, (), ())
    for name, dtype in (("axpy<float>", "float32"), ("axpy<double>", "float64"), ("axpy<__half>", "float16")):
        sig = signature_for(source, name)
        pointers = [(p.name, p.dtype) for p in sig.pointers]
        assert pointers == [("x", dtype), ("y", dtype), ("out", dtype)]
        assert [(p.name, p.dtype) for p in sig.scalars] == [("a", dtype), ("n", "int64")]
    sums = signature_for(KernelSource(BLOCK_SUM, None, (), ()), "block_sum<double, 128>")
    assert [p.dtype for p in sums.params] == ["float64", "float64", "int64"]


def test_a_template_argument_on_a_plain_kernel_is_refused() -> None:
    with pytest.raises(KernelCallError, match="is not a template"):
        brainevent.cuda_kernel(VECTOR_ADD, "add<float>", _spec(), launch_dims=8, n=8)


def test_launch_settings_are_typed_errors_that_stay_value_errors() -> None:
    with pytest.raises(KernelCallError, match="give either") as caught:
        brainevent.cuda_kernel(VECTOR_ADD, "add", _spec(), grid=1, block=8, launch_dims=8, n=8)
    assert isinstance(caught.value, ValueError)
    with pytest.raises(KernelCallError, match="needs launch_dims="):
        brainevent.cuda_kernel(VECTOR_ADD, "add", _spec(), grid=1, block=8, vmap_method="expand_dims", n=8)
    with pytest.raises(KernelCallError, match="vmap_method must be one of"):
        brainevent.cuda_kernel(VECTOR_ADD, "add", _spec(), launch_dims=8, vmap_method="loop", n=8)
    with pytest.raises(KernelCallError, match="takes real architectures"):
        brainevent.cuda_kernel(
            VECTOR_ADD, "add", _spec(), launch_dims=8, compute_capability="compute_90", n=8
        )


def test_a_missing_file_is_named() -> None:
    with pytest.raises(KernelCallError, match=r"'no/such/kernel\.cu': no such file"):
        brainevent.cuda_kernel("no/such/kernel.cu", "add", _spec(), launch_dims=8, n=8)


def _params(source: str, name: str, operands: list[object], n_inputs: int, **scalars: object) -> list[object]:
    from brainevent.nvrtc.launch import KernelSource, operand_params, signature_for

    sig = signature_for(KernelSource(source, None, (), ()), name)
    return operand_params(sig, name, operands, n_inputs, scalars)


def test_operands_map_to_pointers_and_scalars_to_their_bits() -> None:
    from brainevent.launchers.cubin import OPERAND, SCALAR, Param

    f64 = _spec(8, np.float64)
    params = _params(AXPY, "axpy<double>", [f64, f64, f64], 2, a=-1.5, n=8)
    (bits,) = struct.unpack("<q", struct.pack("<d", -1.5))
    assert params == [
        Param(OPERAND, 0, 8),
        Param(OPERAND, 1, 8),
        Param(OPERAND, 2, 8),
        Param(SCALAR, bits, 8),
        Param(SCALAR, 8, 8),
    ]
    f32 = _spec()
    params = _params(VECTOR_ADD, "add", [f32, f32, f32], 2, n=np.int64(5))
    assert params[-1] == Param(SCALAR, 5, 4)


def test_operand_mismatches_are_typed_errors() -> None:
    f32, f64 = _spec(), _spec(8, np.float64)
    with pytest.raises(
        KernelCallError, match=r"takes 3 pointer parameter\(s\) \(x, y, out\), but the call has 1 input"
    ):
        _params(VECTOR_ADD, "add", [f32, f32], 1, n=8)
    with pytest.raises(
        KernelCallError, match=r"parameter 'y' is 'const float\*', but it receives input 1, of dtype float64"
    ):
        _params(VECTOR_ADD, "add", [f32, f64, f32], 2, n=8)
    with pytest.raises(KernelCallError, match=r"scalar 'n'=4294967296 does not fit its type int"):
        _params(VECTOR_ADD, "add", [f32, f32, f32], 2, n=2**32)
    with pytest.raises(KernelCallError, match=r"scalar 'n'=2.5 is not a whole number, but its type is int"):
        _params(VECTOR_ADD, "add", [f32, f32, f32], 2, n=2.5)
    assert _params(VECTOR_ADD, "add", [f32, f32, f32], 2, n=4.0)[-1].value == 4
    with pytest.raises(KernelCallError, match="must be a single number"):
        _params(VECTOR_ADD, "add", [f32, f32, f32], 2, n=[1, 2])


def test_a_traced_scalar_is_refused_with_the_way_out() -> None:
    import jax
    import jax.numpy as jnp

    add = brainevent.cuda_kernel(
        VECTOR_ADD,
        "add",
        _spec(),
        launch_dims=8,
        compute_capability="sm_90",
        n=lambda x, y: jnp.sum(x).astype(int),
    )
    with pytest.raises(KernelCallError, match="must be a number known at trace time"):
        jax.jit(add).lower(np.ones(8, np.float32), np.ones(8, np.float32))


def test_ctype_names_the_cuda_type_of_a_dtype() -> None:
    from brainevent.nvrtc.kernel import ctype

    assert [ctype(d) for d in (np.float32, np.float64, np.int64, "float16")] == [
        "float",
        "double",
        "long long",
        "__half",
    ]
    with pytest.raises(KernelCallError, match="no CUDA C\\+\\+ type for dtype complex64"):
        ctype(np.complex64)


def test_a_scalar_passed_as_an_argument_is_named() -> None:
    add = brainevent.cuda_kernel(VECTOR_ADD, "add", _spec(), launch_dims=8, compute_capability="sm_90", n=8)
    with pytest.raises(
        KernelCallError, match=r"argument 1 must be an array, got float; pass scalars as keywords"
    ):
        add(np.ones(8, np.float32), 2.0)


def test_options_given_as_one_string_are_refused_by_both_entry_points() -> None:
    import brainevent.nvrtc as nv

    with pytest.raises(KernelCallError, match="options must be a list of NVRTC options, got the string"):
        brainevent.cuda_kernel(VECTOR_ADD, "add", _spec(), launch_dims=8, options="-DX=1", n=8)
    with pytest.raises(KernelCallError, match="options must be a list of NVRTC options, got the string"):
        nv.compile(VECTOR_ADD, "add", "sm_80", options="-DX=1")
