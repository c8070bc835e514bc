"""Two different modules never silently share an FFI target; one module reloading does."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent import RegistrationError
from brainevent.runtime.registry import registered_targets

ADD = r"""
#include "brainevent/common.h"
void add(const BE::Tensor x, BE::Tensor out) {{
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i] + {step}.0f;
}}
"""
SUB = r"""
void sub(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i] - 1.0f;
}
"""


def _raw(target: str, x: jax.Array) -> np.ndarray:
    return np.asarray(jax.ffi.ffi_call(target, jax.ShapeDtypeStruct(x.shape, x.dtype))(x))


def test_second_module_cannot_take_a_target_silently() -> None:
    x = jnp.zeros(3, jnp.float32)
    first = brainevent.load_cpp_inline("coll_first", ADD.format(step=1), ["add"], target_prefix="coll_shared")
    compiled = jax.jit(first.add)
    np.testing.assert_array_equal(compiled(x), np.ones(3))
    with pytest.raises(RegistrationError) as info:
        brainevent.load_cpp_inline("coll_second", ADD.format(step=100), ["add"], target_prefix="coll_shared")
    message = str(info.value)
    for needle in ("'coll_second'", "'coll_first'", "'coll_shared.add'", "target_prefix=", "replace=True"):
        assert needle in message, message
    err = info.value
    assert (err.target, err.module, err.registered_by, err.platform) == (
        "coll_shared.add",
        "coll_second",
        "coll_first",
        "cpu",
    )
    # The first module's target still runs the first module's code, everywhere.
    np.testing.assert_array_equal(first.add(x), np.ones(3))
    np.testing.assert_array_equal(compiled(x), np.ones(3))
    np.testing.assert_array_equal(_raw("coll_shared.add", x), np.ones(3))
    # Reloading the first module (new source, same name and prefix) still re-points.
    brainevent.load_cpp_inline("coll_first", ADD.format(step=7), ["add"], target_prefix="coll_shared")
    np.testing.assert_array_equal(compiled(x), np.full(3, 7.0))
    # The same refusal for a second module with the first one's name as its prefix.
    with pytest.raises(
        RegistrationError, match=r"module 'coll_third' cannot register FFI target 'coll_shared.add'"
    ):
        brainevent.load_cpp_inline("coll_third", ADD.format(step=3), ["add"], target_prefix="coll_shared")


def test_refusal_registers_none_of_the_module_targets() -> None:
    x = jnp.zeros(2, jnp.float32)
    brainevent.load_cpp_inline("coll_owner", ADD.format(step=2), ["add"], target_prefix="coll_partial")
    before = registered_targets()
    with pytest.raises(RegistrationError, match=r"FFI target 'coll_partial.add'.*module 'coll_owner'"):
        brainevent.load_cpp_inline(
            "coll_greedy",
            ADD.format(step=9) + SUB,
            ["sub", "add"],
            target_prefix="coll_partial",
        )
    assert registered_targets() == before  # 'coll_partial.sub' was not registered either
    np.testing.assert_array_equal(_raw("coll_partial.add", x), np.full(2, 2.0))


def test_replace_true_takes_the_target_over_on_purpose() -> None:
    x = jnp.zeros(3, jnp.float32)
    first = brainevent.load_cpp_inline("coll_old", ADD.format(step=1), ["add"], target_prefix="coll_taken")
    compiled = jax.jit(first.add)
    np.testing.assert_array_equal(compiled(x), np.ones(3))
    second = brainevent.load_cpp_inline(
        "coll_new", ADD.format(step=50), ["add"], target_prefix="coll_taken", replace=True
    )
    for result in (compiled(x), first.add(x), second.add(x), _raw("coll_taken.add", x)):
        np.testing.assert_array_equal(result, np.full(3, 50.0))
    # The target now belongs to coll_new: coll_new reloads freely, coll_old needs replace=True.
    brainevent.load_cpp_inline("coll_new", ADD.format(step=60), ["add"], target_prefix="coll_taken")
    np.testing.assert_array_equal(compiled(x), np.full(3, 60.0))
    with pytest.raises(RegistrationError, match=r"already registered to different module 'coll_new'"):
        brainevent.load_cpp_inline("coll_old", ADD.format(step=1), ["add"], target_prefix="coll_taken")
    brainevent.load_cpp_inline(
        "coll_old", ADD.format(step=1), ["add"], target_prefix="coll_taken", replace=True
    )
    np.testing.assert_array_equal(compiled(x), np.ones(3))


def test_replace_is_accepted_by_every_loader(tmp_path) -> None:  # type: ignore[no-untyped-def]
    source = tmp_path / "coll_file.cpp"
    source.write_text(ADD.format(step=4))
    mod = brainevent.load_cpp_file(source, ["add"], target_prefix="coll_file_prefix", replace=True)
    np.testing.assert_array_equal(mod.add(jnp.zeros(2, jnp.float32)), np.full(2, 4.0))
    with pytest.raises(brainevent.SpecError, match=r"replace=1 must be True or False"):
        brainevent.load_cpp_file(source, ["add"], replace=1)


CUDA_ADD = r"""
#include "brainevent/common.h"
__global__ void add_kernel(const float* x, float* out, int64_t n, float step) {{
    const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = x[i] + step;
}}
void add(const BE::Tensor x, BE::Tensor out, int64_t stream) {{
    const int64_t n = x.numel();
    add_kernel<<<(n + 127) / 128, 128, 0, (cudaStream_t)stream>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), n, {step}.0f);
}}
"""


@pytest.mark.gpu
def test_second_cuda_module_cannot_take_a_target_silently() -> None:
    # XLA's CUDA registry would keep the first handler without a word: the refusal matters most here.
    x = jnp.zeros(8, jnp.float32, device=jax.devices("gpu")[0])
    first = brainevent.load_cuda_inline(
        "coll_gpu_a", CUDA_ADD.format(step=1), ["add"], target_prefix="coll_gpu"
    )
    np.testing.assert_array_equal(np.asarray(first.add(x)), np.ones(8))
    with pytest.raises(RegistrationError, match=r"module 'coll_gpu_b'.*'coll_gpu.add'.*module 'coll_gpu_a'"):
        brainevent.load_cuda_inline("coll_gpu_b", CUDA_ADD.format(step=9), ["add"], target_prefix="coll_gpu")
    np.testing.assert_array_equal(np.asarray(first.add(x)), np.ones(8))
    brainevent.load_cuda_inline(
        "coll_gpu_b", CUDA_ADD.format(step=9), ["add"], target_prefix="coll_gpu", replace=True
    )
    np.testing.assert_array_equal(np.asarray(first.add(x)), np.full(8, 9.0))
