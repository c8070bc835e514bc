"""XLACustomKernel on the CPU: real Numba and real g++ kernels, rules, and every documented error."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.interpreters import ad

import brainevent
from brainevent import KernelCallError, XLACustomKernel
from tests.support.kernels import CPU_SCALE

numba = pytest.importorskip("numba")
# Several tests here reuse a primitive name on purpose (each makes its own "axpy").
pytestmark = pytest.mark.filterwarnings("ignore:an XLACustomKernel named:UserWarning")


def spec(shape: tuple[int, ...], dtype: object = jnp.float32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


@numba.njit
def axpy_kernel(x, y, out):  # type: ignore[no-untyped-def]
    for i in range(x.size):
        out[i] = 2.0 * x[i] + y[i]


@pytest.fixture(scope="module")
def scale_module():  # type: ignore[no-untyped-def]
    # Works on any rank: a batched call sees one flat buffer.
    return brainevent.load_cpp_inline(
        name="ck_scale",
        cpp_sources=CPU_SCALE,
    )


def linear_axpy() -> XLACustomKernel:
    """out = 2x + y, with the rules of a linear map."""
    op = XLACustomKernel("axpy").def_numba_kernel(axpy_kernel)

    @op.def_jvp_rule
    def jvp(primals, tangents, *, outs):  # type: ignore[no-untyped-def]
        return op(*primals, outs=outs[0]), op(*tangents, outs=outs[0])

    @op.def_transpose_rule
    def transpose(cts, x, y, *, outs):  # type: ignore[no-untyped-def]
        (ct,) = cts
        return [2.0 * ct if ad.is_undefined_primal(x) else None, ct if ad.is_undefined_primal(y) else None]

    return op


X = np.arange(16, dtype=np.float32)
Y = np.linspace(-1.0, 1.0, 16, dtype=np.float32)


def test_numba_kernel_eager_and_jit_match_numpy() -> None:
    op = XLACustomKernel("axpy").def_numba_kernel(axpy_kernel)
    expected = 2 * X + Y
    np.testing.assert_allclose(op(X, Y, outs=spec((16,))), expected)
    np.testing.assert_allclose(jax.jit(lambda a, b: op(a, b, outs=spec((16,))))(X, Y), expected)
    assert op.platforms == ["cpu"]


def test_outs_callable_default_and_pytree_results() -> None:
    @numba.njit
    def split(x, lo, hi):  # type: ignore[no-untyped-def]
        for i in range(x.size):
            lo[i] = min(x[i], 0.0)
            hi[i] = max(x[i], 0.0)

    # The kernel gets the outputs in the pytree's flattening order: dict keys sorted.
    op = XLACustomKernel("split", outs=lambda x: {"a_lo": spec(x.shape), "b_hi": spec(x.shape)})
    op.def_numba_kernel(split)
    result = jax.jit(op)(Y)
    np.testing.assert_array_equal(result["a_lo"], np.minimum(Y, 0))
    np.testing.assert_array_equal(result["b_hi"], np.maximum(Y, 0))


def test_generator_builds_one_kernel_per_attribute_value() -> None:
    made: list[float] = []

    def generator(power: float):  # type: ignore[no-untyped-def]
        made.append(power)

        @numba.njit
        def kernel(x, out):  # type: ignore[no-untyped-def]
            for i in range(x.size):
                out[i] = x[i] ** power

        return kernel

    op = XLACustomKernel("power", outs=lambda x, **_: spec(x.shape)).def_numba_kernel(generator=generator)
    f = jax.jit(lambda x, p: op(x, power=p), static_argnums=1)
    np.testing.assert_allclose(f(X, 2.0), X**2)
    np.testing.assert_allclose(f(X, 3.0), X**3, rtol=1e-6)
    np.testing.assert_allclose(op(X + 1, power=2.0), (X + 1) ** 2)
    assert made == [2.0, 3.0]


def test_compiled_module_function_with_attributes(scale_module) -> None:  # type: ignore[no-untyped-def]
    op = XLACustomKernel("scale", outs=lambda x, **_: spec(x.shape)).def_kernel("cpu", scale_module.scale)
    np.testing.assert_allclose(jax.jit(lambda x: op(x, factor=2.5))(X), X * 2.5)
    with pytest.raises(KernelCallError, match="factor"):
        jax.jit(lambda x: op(x, factor=1e300))(X)  # out of range for float32
    with pytest.raises(KernelCallError, match="unexpected attribute"):
        jax.jit(lambda x: op(x, factor=1.0, bias=2.0))(X)


def test_module_function_on_the_wrong_platform(scale_module) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="compiled for 'cpu', not 'cuda'"):
        XLACustomKernel("scale").def_kernel("gpu", scale_module.scale)


def test_vmap_default_is_a_loop_over_unbatched_calls() -> None:
    op = XLACustomKernel("axpy").def_numba_kernel(axpy_kernel)
    xs = np.stack([X, X + 1, X * 3])
    result = jax.jit(jax.vmap(lambda a: op(a, Y, outs=spec((16,)))))(xs)
    np.testing.assert_allclose(result, 2 * xs + Y)


@pytest.mark.parametrize("method", ["expand_dims", "broadcast_all"])
def test_vmap_methods_hand_the_kernel_a_batch_axis(scale_module, method: str) -> None:  # type: ignore[no-untyped-def]
    op = XLACustomKernel("scale", outs=lambda x, **_: spec(x.shape), vmap_method=method)
    op.def_kernel("cpu", scale_module.scale)
    xs = np.stack([X, -X])
    jaxpr = jax.make_jaxpr(jax.vmap(lambda a: op(a, factor=3.0)))(xs)
    assert "scan" not in str(jaxpr)  # one call on the whole batch, no loop
    np.testing.assert_allclose(jax.vmap(lambda a: op(a, factor=3.0))(xs), xs * 3)


def test_custom_batching_rule_is_used() -> None:
    op = XLACustomKernel("axpy").def_numba_kernel(axpy_kernel)
    calls: list[list[int | None]] = []

    @op.def_batching_rule
    def rule(args, axes, *, outs):  # type: ignore[no-untyped-def]
        calls.append(list(axes))
        x, y = args
        x = jnp.moveaxis(x, axes[0], 0) if axes[0] is not None else x
        y = jnp.moveaxis(y, axes[1], 0) if axes[1] is not None else jnp.broadcast_to(y, x.shape)
        flat = op(x.reshape(-1), y.reshape(-1), outs=spec((x.size,)))
        return [flat.reshape(x.shape)], [0]

    xs = np.stack([X, X + 2])
    np.testing.assert_allclose(jax.vmap(lambda a: op(a, Y, outs=spec((16,))))(xs), 2 * xs + Y)
    assert calls == [[0, None]]


def test_jvp_and_grad_through_the_rules() -> None:
    op = linear_axpy()
    out, tangent = jax.jvp(lambda a: op(a, Y, outs=spec((16,))), (X,), (np.ones(16, np.float32),))
    np.testing.assert_allclose(out, 2 * X + Y)
    np.testing.assert_allclose(tangent, np.full(16, 2.0))
    gx, gy = jax.jit(jax.grad(lambda a, b: (op(a, b, outs=spec((16,))) ** 2).sum(), argnums=(0, 1)))(X, Y)
    np.testing.assert_allclose(gx, 4 * (2 * X + Y), rtol=1e-6)
    np.testing.assert_allclose(gy, 2 * (2 * X + Y), rtol=1e-6)


def test_missing_rules_name_the_primitive() -> None:
    op = XLACustomKernel("no_rules").def_numba_kernel(axpy_kernel)
    with pytest.raises(NotImplementedError, match=r"no_rules.*def_jvp_rule"):
        jax.jvp(lambda a: op(a, Y, outs=spec((16,))), (X,), (X,))

    @op.def_jvp_rule
    def jvp(primals, tangents, *, outs):  # type: ignore[no-untyped-def]
        return op(*primals, outs=outs[0]), op(*tangents, outs=outs[0])

    with pytest.raises(NotImplementedError, match=r"no_rules.*def_transpose_rule"):
        jax.grad(lambda a: op(a, Y, outs=spec((16,))).sum())(X)


def test_input_output_aliases() -> None:
    @numba.njit
    def add_into(acc, x, out):  # type: ignore[no-untyped-def]
        for i in range(x.size):
            out[i] = acc[i] + x[i]

    op = XLACustomKernel("add_into", input_output_aliases={0: 0}).def_numba_kernel(add_into)
    f = jax.jit(lambda acc, x: op(acc, x, outs=spec((16,))), donate_argnums=0)
    np.testing.assert_allclose(f(jnp.asarray(Y), X), X + Y)


def test_no_kernel_for_the_platform_is_a_clear_error() -> None:
    op = XLACustomKernel("gpu_only")
    with pytest.raises(
        KernelCallError, match=r"'gpu_only' has no kernel for platform 'cpu'.*def_numba_kernel"
    ):
        op(X, outs=spec((16,)))
    with pytest.raises(KernelCallError, match="has no kernel"):
        jax.jit(lambda a: op(a, outs=spec((16,))))(X)


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: XLACustomKernel(""), ValueError, "non-empty"),
        (lambda: XLACustomKernel("x", vmap_method="loop"), ValueError, "vmap_method"),
        (lambda: XLACustomKernel("x", num_batch_dims=0), ValueError, "num_batch_dims"),
        (lambda: XLACustomKernel("x", num_batch_dims=True), ValueError, "num_batch_dims"),
        (lambda: XLACustomKernel("x").def_kernel("tpu", None), ValueError, "platform"),
        (lambda: XLACustomKernel("x").def_kernel("cpu", lambda x: x), TypeError, "KernelFunction"),
        (lambda: XLACustomKernel("x").def_numba_kernel(), TypeError, "exactly one"),
        (
            lambda: XLACustomKernel("x").def_numba_kernel(axpy_kernel, generator=lambda: 0),
            TypeError,
            "exactly one",
        ),
        (lambda: XLACustomKernel("x").def_numba_kernel(generator=3), TypeError, "callable"),
    ],
)
def test_bad_definitions(make, error, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=match):
        make()


def test_bad_calls() -> None:
    op = XLACustomKernel("axpy").def_numba_kernel(axpy_kernel)
    with pytest.raises(KernelCallError, match="no result specs"):
        op(X, Y)
    with pytest.raises(KernelCallError, match="attribute 'w' must be a scalar"):
        op(X, Y, outs=spec((16,)), w=np.ones(3))
    with pytest.raises(KernelCallError, match=r"takes no attributes.*generator="):
        op(X, Y, outs=spec((16,)), w=1.0)
    batched = XLACustomKernel("rows", num_batch_dims=1).def_numba_kernel(axpy_kernel)
    with pytest.raises(KernelCallError, match="share its first 1 dims"):
        batched(np.ones((4, 2), np.float32), np.ones((3, 2), np.float32), outs=spec((4, 2)))
