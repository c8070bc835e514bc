"""XLACustomKernel's named backends on the CPU: selection, defaults, the global choice, per-call
override, fallback, the registry and benchmark(), with real Numba, g++, Pallas (interpreter)
and plain-JAX kernels, compared with NumPy."""

from __future__ import annotations

import itertools
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.interpreters import ad

import brainevent
from brainevent import config
from brainevent.config import ConfigError
from brainevent.custom_kernel import (
    BenchmarkConfig,
    XLACustomKernel,
    get_all_primitive_names,
    get_primitives_by_tags,
    get_registry,
)
from brainevent.errors import (
    BackendNotInstalledError,
    CompileError,
    KernelCallError,
    KernelFallbackExhaustedError,
    UnhashableAttributeError,
)
from tests.support.kernels import CPU_SCALE

_ids = itertools.count()
X = np.arange(8, dtype=np.float32)
SPEC = jax.ShapeDtypeStruct((8,), jnp.float32)


def fresh(name: str) -> str:
    """A primitive name no other test uses (a reused name warns, which tests check on purpose)."""
    return f"{name}_{next(_ids)}"


def adds(k: float) -> Callable[..., Any]:
    """A kernel generator in 0.2.1's form whose kernel is plain JAX: x + k."""

    def generator(outs: Any, **attrs: Any) -> Callable[..., Any]:
        return lambda x: (x + k,)

    return generator


def boom(**attrs: Any) -> Any:
    raise RuntimeError("boom: this backend cannot build")


@pytest.fixture(autouse=True)
def no_global_backend() -> Iterator[None]:
    config.clear_backends()
    yield
    config.clear_backends()


@pytest.fixture(scope="module")
def scale_module():  # type: ignore[no-untyped-def]
    return brainevent.load_cpp_inline(
        name="ckb_scale",
        cpp_sources=CPU_SCALE,
    )


def run(op: XLACustomKernel, **kwargs: Any) -> np.ndarray:
    return np.asarray(op(X, outs=SPEC, **kwargs))


# -- selection ---------------------------------------------------------------------------------


def test_first_backend_is_default_and_set_default_reaches_compiled_functions() -> None:
    op = XLACustomKernel(fresh("sel"))
    op.def_kernel("a", "cpu", adds(1.0))
    op.def_kernel("b", "cpu", adds(2.0))
    assert op.available_backends("cpu") == ["a", "b"]
    assert op.defaults == {"cpu": "a"} and op.get_default("cpu") == "a"
    f = jax.jit(lambda x: op(x, outs=SPEC))
    np.testing.assert_array_equal(f(X), X + 1)
    op.set_default("cpu", "b")
    np.testing.assert_array_equal(f(X), X + 2)  # the warm jit recompiled with the new default
    np.testing.assert_array_equal(run(op), X + 2)


def test_asdefault_and_per_call_override() -> None:
    op = XLACustomKernel(fresh("sel"))
    op.def_kernel("a", "cpu", adds(1.0))
    op.def_kernel("b", "cpu", adds(2.0), asdefault=True)
    assert op.get_default("cpu") == "b"
    np.testing.assert_array_equal(run(op), X + 2)
    np.testing.assert_array_equal(run(op, backend="a"), X + 1)
    g = jax.jit(lambda x, be: op(x, outs=SPEC, backend=be), static_argnums=1)
    np.testing.assert_array_equal(g(X, "a"), X + 1)
    np.testing.assert_array_equal(g(X, "b"), X + 2)


def test_redefining_a_backend_or_the_default_reaches_compiled_functions() -> None:
    op = XLACustomKernel(fresh("sel"))
    op.def_kernel("a", "cpu", adds(1.0))
    f = jax.jit(lambda x: op(x, outs=SPEC))
    np.testing.assert_array_equal(f(X), X + 1)
    op.def_kernel("a", "cpu", adds(5.0))  # same name: replaces it
    np.testing.assert_array_equal(f(X), X + 5)
    op.def_kernel("b", "cpu", adds(7.0), asdefault=True)
    np.testing.assert_array_equal(f(X), X + 7)


def test_global_backend_beats_the_default_and_per_call_beats_both() -> None:
    op = XLACustomKernel(fresh("sel"))
    op.def_kernel("a", "cpu", adds(1.0))
    op.def_kernel("b", "cpu", adds(2.0))
    f = jax.jit(lambda x: op(x, outs=SPEC))
    np.testing.assert_array_equal(f(X), X + 1)
    brainevent.config.set_backend("cpu", "b")
    assert config.get_backend("cpu") == "b"
    np.testing.assert_array_equal(f(X), X + 2)
    np.testing.assert_array_equal(run(op, backend="a"), X + 1)
    config.set_backend("cpu", None)
    assert config.get_backend("cpu") is None
    np.testing.assert_array_equal(f(X), X + 1)


def test_a_global_backend_this_primitive_lacks_warns_once_and_uses_the_default() -> None:
    op = XLACustomKernel(fresh("sel"))
    op.def_kernel("a", "cpu", adds(1.0))
    config.set_backend("gpu", "warp")  # another platform: no effect here
    config.set_backend("cpu", "warp")
    with pytest.warns(UserWarning, match=r"global backend 'warp'.*ignoring it and using 'a'"):
        np.testing.assert_array_equal(run(op), X + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same situation does not warn again
        np.testing.assert_array_equal(np.asarray(op(X + 1, outs=SPEC)), X + 2)


def test_global_backend_setting_validates_its_arguments() -> None:
    with pytest.raises(ConfigError, match="empty string"):
        config.set_backend("cpu", "")
    with pytest.raises(ConfigError, match=r"platform must be one of .*'metal'"):
        config.set_backend("metal", "numba")
    config.set_backend("cuda", "warp")  # an alias of 'gpu'
    assert config.get_backend("gpu") == "warp"


def test_set_default_and_call_errors_name_what_is_defined() -> None:
    op = XLACustomKernel(fresh("sel"))
    with pytest.raises(KernelCallError, match="no kernels for platform 'cpu'"):
        op.set_default("cpu", "a")
    op.def_kernel("a", "cpu", adds(1.0))
    with pytest.raises(KernelCallError, match=r"no backend 'zz' for 'cpu'; defined: \['a'\]"):
        op.set_default("cpu", "zz")
    with pytest.raises(KernelFallbackExhaustedError, match=r"backend='zz' was requested.*defines \['a'\]"):
        run(op, backend="zz")
    with pytest.raises(KernelCallError, match="backend cannot be an empty string"):
        run(op, backend="")


# -- the two forms of def_kernel ----------------------------------------------------------------


def test_def_kernel_forms_are_told_apart_by_their_arguments(scale_module) -> None:  # type: ignore[no-untyped-def]
    op = XLACustomKernel(fresh("forms"), outs=lambda x, **_: jax.ShapeDtypeStruct(x.shape, x.dtype))
    op.def_kernel("cpu", scale_module.scale)  # compiled form: backend "cpp"
    op.def_kernel(backend="plain", platform="cpu", kg=lambda outs, factor: lambda x: (x * factor,))
    op.def_kernel("named_cpp", "cpu", scale_module.scale)  # a compiled function under its own name
    assert op.available_backends("cpu") == ["cpp", "plain", "named_cpp"]
    for backend in ("cpp", "plain", "named_cpp"):
        np.testing.assert_allclose(op(X, factor=1.5, backend=backend), X * 1.5)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((123, "cpu", adds(1.0)), {}, TypeError, "backend must be a non-empty string"),
        (("numba", 123, adds(1.0)), {}, TypeError, "platform must be a string"),
        (("numba", "metal", adds(1.0)), {}, ValueError, r"platform must be one of .*'metal'"),
        (("numba", "cpu", "not-a-callable"), {}, TypeError, "kernel_generator must be callable"),
        (("numba", "cpu", adds(1.0)), {"kg": adds(2.0)}, TypeError, "not both"),
        (("numba", "cpu"), {}, TypeError, r"def_kernel\('numba', 'cpu'\) lacks its kernel_generator"),
        (
            ("cpu", "not-a-function"),
            {},
            TypeError,
            r"KernelFunction.*def_kernel\(backend, platform, kernel_generator\)",
        ),
    ],
)
def test_def_kernel_bad_arguments(args, kwargs, error, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=match):
        XLACustomKernel(fresh("bad")).def_kernel(*args, **kwargs)


def test_convenience_definitions_name_their_backend_and_platform() -> None:
    op = XLACustomKernel(fresh("conv"))
    op.def_warp_kernel(adds(1.0))
    op.def_triton_kernel(adds(1.0))
    op.def_pallas_kernel("gpu", adds(1.0))
    op.def_pallas_kernel("tpu", adds(1.0))
    op.def_cuda_raw_kernel(adds(1.0))
    op.def_numba_cuda_kernel(adds(1.0))  # a callable that is not a Numba kernel: a generator
    op.def_numba_kernel(adds(1.0))
    assert op.available_backends("gpu") == ["warp", "triton", "pallas", "cuda_raw", "numba_cuda"]
    assert op.available_backends("tpu") == ["pallas"]
    assert op.available_backends("cpu") == ["numba"]
    assert op.defaults == {"gpu": "warp", "tpu": "pallas", "cpu": "numba"}
    with pytest.raises(ValueError, match=r"'gpu' or 'tpu', got 'cpu'.*def_kernel\('pallas', 'cpu', kg\)"):
        op.def_pallas_kernel("cpu", adds(1.0))


# -- fallback ------------------------------------------------------------------------------------


def test_a_failing_default_falls_back_to_the_next_backend_with_a_warning() -> None:
    op = XLACustomKernel(fresh("fb"))
    op.def_kernel("broken", "cpu", boom)
    op.def_kernel("good", "cpu", adds(3.0))
    with pytest.warns(UserWarning, match=r"'broken': RuntimeError: boom.*used backend 'good' instead"):
        np.testing.assert_array_equal(jax.jit(lambda x: op(x, outs=SPEC))(X), X + 3)


def test_every_backend_failing_lists_each_with_its_reason() -> None:
    op = XLACustomKernel(fresh("fb"))
    op.def_kernel("broken", "cpu", boom)
    op.def_kernel("not_a_function", "cpu", lambda outs: 42)
    op.def_kernel("wrong_shape", "cpu", lambda outs: lambda x: (x[:3],))
    with pytest.raises(KernelFallbackExhaustedError) as info:
        run(op)
    text = str(info.value)
    assert re.search(r"no working backend for platform 'cpu'; tried, in order:", text)
    assert "'broken': RuntimeError: boom" in text
    assert (
        "'not_a_function': KernelCallError: the kernel generator of backend 'not_a_function' returned int"
        in text
    )
    assert (
        "'wrong_shape': KernelCallError: the kernel of backend 'wrong_shape' returned result 0 as float32[3]"
        in text
    )
    assert [b for b, _ in info.value.tried] == ["broken", "not_a_function", "wrong_shape"]
    assert isinstance(info.value.__cause__, KernelCallError)


def test_a_requested_backend_is_not_replaced_by_another() -> None:
    op = XLACustomKernel(fresh("fb"))
    op.def_kernel("good", "cpu", adds(1.0))
    op.def_kernel("broken", "cpu", boom)
    with pytest.raises(
        CompileError, match=r"backend 'broken' .*RuntimeError: boom.*Other backends for 'cpu': \['good'\]"
    ):
        run(op, backend="broken")
    try:
        run(op, backend="broken")
    except CompileError as exc:
        assert isinstance(exc.__cause__, RuntimeError)


def test_our_typed_error_from_the_only_backend_comes_through_unchanged(scale_module) -> None:  # type: ignore[no-untyped-def]
    op = XLACustomKernel(fresh("fb"), outs=lambda x, **_: SPEC).def_kernel("cpu", scale_module.scale)
    with pytest.raises(KernelCallError, match="factor") as info:
        op(X, factor=1e300)
    assert not isinstance(info.value, KernelFallbackExhaustedError)
    assert any("backend 'cpp'" in note for note in getattr(info.value, "__notes__", []))


def test_a_failure_half_way_through_lowering_leaves_nothing_behind() -> None:
    # The broken backend's kernel emits a sine, then needs a primitive with no CPU kernel:
    # its lowering fails after operations were emitted; they must not reach the program.
    gpu_only = XLACustomKernel(fresh("gpu_only")).def_kernel("g", "gpu", adds(0.0))
    op = XLACustomKernel(fresh("fb"))
    op.def_kernel("half_way", "cpu", lambda outs: lambda x: (gpu_only(jnp.sin(x), outs=SPEC),))
    op.def_kernel("good", "cpu", adds(1.0))
    f = jax.jit(lambda x: op(x, outs=SPEC))
    with pytest.warns(UserWarning, match="'half_way': KernelFallbackExhaustedError"):
        text = f.lower(X).as_text()
    assert "sine" not in text
    np.testing.assert_array_equal(f(X), X + 1)


def test_the_rollback_also_works_when_inserting_before_an_operation() -> None:
    from jax._src.interpreters.mlir import make_ir_context
    from jax.interpreters.mlir import ir

    from brainevent.custom_kernel.selection import IRMark

    with make_ir_context(), ir.Location.unknown():
        module = ir.Module.parse("func.func @f() {\n %0 = arith.constant 1 : i32\n return\n}")
        block = module.body.operations[0].regions[0].blocks[0]
        ret = list(block.operations)[-1]
        i32 = ir.IntegerType.get_signless(32)
        with ir.InsertionPoint(ret):  # new operations go before `return`
            mark = IRMark()
            for value in (7, 8):
                ir.Operation.create(
                    "arith.constant", [i32], attributes={"value": ir.IntegerAttr.get(i32, value)}
                )
            assert len(block.operations) == 4
            mark.rollback()
        assert [op.name for op in block.operations] == ["arith.constant", "func.return"]
        assert "arith.constant 1" in str(module) and "7" not in str(module)


# -- a missing platform, missing libraries ------------------------------------------------------


def test_a_missing_platform_names_it_and_the_def_call_to_add() -> None:
    op = XLACustomKernel(fresh("cpu_only")).def_kernel("a", "cpu", adds(1.0))
    f = jax.jit(lambda x: op(x, outs=SPEC))
    with pytest.raises(
        KernelFallbackExhaustedError,
        match=r"no kernel for platform 'tpu' \(it has kernels for: cpu\).*def_pallas_kernel\('tpu'",
    ):
        jax.export.export(f, platforms=["tpu"])(SPEC)
    with pytest.raises(
        KernelFallbackExhaustedError,
        match=r"no kernel for platform 'gpu'.*def_numba_cuda_kernel.*def_warp_kernel",
    ):
        jax.export.export(f, platforms=["cuda"])(SPEC)
    gpu = XLACustomKernel(fresh("gpu_only")).def_warp_kernel(adds(1.0))
    with pytest.raises(
        KernelCallError, match=r"no kernel for platform 'cpu' \(it has kernels for: gpu\).*def_numba_kernel"
    ):
        gpu(X, outs=SPEC)


def lowered_for_gpu(op: XLACustomKernel) -> str:
    """The StableHLO of a call lowered for CUDA (works on a machine without a GPU)."""
    traced = jax.jit(lambda x: op(x, outs=SPEC)).trace(SPEC)
    return str(traced.lower(lowering_platforms=("cuda",)).as_text())


def test_a_backend_whose_library_is_missing_names_the_pip_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "warp", None)  # as if warp-lang were not installed
    op = XLACustomKernel(fresh("lib")).def_warp_kernel(adds(1.0), platform="cpu")  # defining needs no Warp
    with pytest.raises(BackendNotInstalledError, match="pip install warp-lang") as info:
        run(op)
    assert isinstance(info.value, ImportError) and info.value.package == "warp-lang"
    # With another backend defined, the missing library is a reason to fall back.
    op.def_kernel("plain", "cpu", adds(2.0))
    with pytest.warns(UserWarning, match="BackendNotInstalledError"):
        np.testing.assert_array_equal(run(op), X + 2)


@pytest.mark.parametrize(
    ("backend", "module", "package"),
    [
        ("triton", "triton", "triton"),
        ("warp", "warp", "warp-lang"),
        ("numba_cuda", "numba.cuda", "numba-cuda"),
    ],
)
def test_a_gpu_backend_without_its_library_fails_when_lowered_for_the_gpu(
    monkeypatch: pytest.MonkeyPatch, backend: str, module: str, package: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    op = XLACustomKernel(fresh("lib")).def_kernel(backend, "gpu", adds(1.0))
    with pytest.raises(BackendNotInstalledError, match=f"'{backend}' backend needs .*pip install {package}"):
        lowered_for_gpu(op)


def test_triton_kernel_without_triton_names_the_pip_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "triton", None)
    with pytest.raises(BackendNotInstalledError, match="pip install triton"):
        brainevent.triton_kernel(object(), SPEC, grid=1)


@pytest.mark.parametrize(
    ("backend", "platform", "runs_on"),
    [
        ("triton", "cpu", "'gpu'"),
        ("triton", "tpu", "'gpu'"),
        ("numba_cuda", "cpu", "'gpu'"),
        ("numba", "gpu", "'cpu'"),
        ("warp", "tpu", "'cpu' and 'gpu'"),
    ],
)
def test_a_backend_on_a_platform_its_library_cannot_run_on_is_refused(
    backend: str, platform: str, runs_on: str
) -> None:
    with pytest.raises(ValueError, match=f"the '{backend}' backend runs on {runs_on}, not on '{platform}'"):
        XLACustomKernel(fresh("plat")).def_kernel(backend, platform, adds(1.0))


def test_def_warp_kernel_takes_cpu_or_gpu() -> None:
    op = XLACustomKernel(fresh("warp_plat"))
    op.def_warp_kernel(adds(1.0))
    op.def_warp_kernel(adds(1.0), platform="cpu")
    assert op.available_backends("gpu") == ["warp"] and op.available_backends("cpu") == ["warp"]
    with pytest.raises(
        ValueError, match=r"platform must be one of \['cpu', 'cuda', 'gpu', 'rocm'\], got 'tpu'"
    ):
        op.def_warp_kernel(adds(1.0), platform="tpu")


# -- real kernels: Numba, g++, Pallas's interpreter ---------------------------------------------


def test_pallas_interpret_mode_runs_as_a_cpu_backend() -> None:
    from jax.experimental import pallas as pl

    def axpy(x_ref, y_ref, o_ref):  # type: ignore[no-untyped-def]
        o_ref[...] = 2.0 * x_ref[...] + y_ref[...]

    def generator(outs: Any) -> Any:
        return pl.pallas_call(axpy, out_shape=outs[0], interpret=True)

    op = XLACustomKernel(fresh("pallas"), outs=lambda x, y: jax.ShapeDtypeStruct(x.shape, x.dtype))
    op.def_kernel("pallas", "cpu", generator)
    y = np.linspace(-1, 1, 8, dtype=np.float32)
    np.testing.assert_allclose(op(X, y), 2 * X + y)
    np.testing.assert_allclose(jax.jit(op)(X, y), 2 * X + y)
    xs = np.stack([X, -X, X * 3])
    np.testing.assert_allclose(jax.jit(jax.vmap(lambda a: op(a, y)))(xs), 2 * xs + y)


def test_numba_kernel_generator_in_0_2_1_form_and_numba_function_side_by_side(scale_module) -> None:  # type: ignore[no-untyped-def]
    numba = pytest.importorskip("numba")

    @numba.njit
    def add_one(x, out):  # type: ignore[no-untyped-def]
        for i in range(x.size):
            out[i] = x[i] + 1.0

    def generator(outs: Any, **attrs: Any) -> Any:
        return brainevent.numba_kernel(add_one, outs=outs)

    op = XLACustomKernel(fresh("numba"), outs=lambda x, **_: jax.ShapeDtypeStruct(x.shape, x.dtype))
    op.def_numba_kernel(generator)  # a plain callable: 0.2.1's generator form
    np.testing.assert_array_equal(jax.jit(op)(X), X + 1)
    other = XLACustomKernel(fresh("numba"), outs=lambda x, **_: jax.ShapeDtypeStruct(x.shape, x.dtype))
    other.def_numba_kernel(add_one)  # a Numba function: called directly
    other.def_kernel("cpu", scale_module.scale)
    assert other.available_backends("cpu") == ["numba", "cpp"]
    np.testing.assert_array_equal(other(X), X + 1)
    np.testing.assert_allclose(other(X, factor=3.0, backend="cpp"), X * 3)
    other.set_default("cpu", "cpp")
    np.testing.assert_allclose(jax.jit(lambda x: other(x, factor=0.5))(X), X * 0.5)

    def plain(x, out):  # type: ignore[no-untyped-def]
        for i in range(x.size):
            out[i] = x[i] * x[i]

    square = XLACustomKernel(fresh("numba"), outs=lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype))
    square.def_numba_kernel(kernel=plain)  # kernel=: a plain function is compiled with njit
    np.testing.assert_array_equal(square(X), X * X)


# -- attributes, rules --------------------------------------------------------------------------


def test_attributes_may_be_any_hashable_value_and_unhashable_ones_are_refused() -> None:
    seen: list[Any] = []

    def generator(outs: Any, shape: tuple[int, int], mode: str) -> Any:
        seen.append((shape, mode))
        return lambda x: (x.reshape(shape).sum(axis=1 if mode == "rows" else 0),)

    op = XLACustomKernel(fresh("attrs"))
    op.def_kernel("plain", "cpu", generator)
    out = op(X, outs=jax.ShapeDtypeStruct((2,), jnp.float32), shape=(2, 4), mode="rows")
    np.testing.assert_array_equal(out, X.reshape(2, 4).sum(axis=1))
    assert seen == [((2, 4), "rows")]
    with pytest.raises(
        UnhashableAttributeError, match=r"attribute 'shape' must be a scalar.*unhashable list"
    ) as info:
        op(X, outs=SPEC, shape=[2, 4], mode="rows")
    assert isinstance(info.value, TypeError) and isinstance(info.value, KernelCallError)


def test_per_input_jvp_rules_and_a_per_call_backend_seen_by_the_rules() -> None:
    def times(k: float) -> Callable[..., Any]:
        return lambda outs: lambda x, y: (k * x + y,)

    op = XLACustomKernel(fresh("rules"), outs=lambda x, y: jax.ShapeDtypeStruct(x.shape, x.dtype))
    op.def_kernel("two", "cpu", times(2.0))
    op.def_kernel("three", "cpu", times(3.0))

    @op.def_jvp_rule
    def jvp(primals, tangents, *, outs):  # type: ignore[no-untyped-def]
        return op(*primals), op(*tangents)  # no backend= here: the outer call's is used

    y = np.ones(8, np.float32)
    _, tangent = jax.jvp(lambda a: op(a, y, backend="three"), (X,), (np.ones(8, np.float32),))
    np.testing.assert_array_equal(tangent, np.full(8, 3.0))  # 3 * dx + dy (zero) with backend 'three'
    _, tangent = jax.jvp(lambda a: op(a, y), (X,), (np.ones(8, np.float32),))
    np.testing.assert_array_equal(tangent, np.full(8, 2.0))  # the default, 'two'

    op.def_jvp_rule2(lambda t, x, y, *, outs: [2.0 * t], lambda t, x, y, *, outs: [t])
    _, tangent = jax.jvp(lambda a, b: op(a, b), (X, y), (np.ones(8, np.float32), np.full(8, 5.0, np.float32)))
    np.testing.assert_array_equal(tangent, np.full(8, 7.0))
    _, tangent = jax.jvp(lambda a: op(a, y), (X,), (np.ones(8, np.float32),))  # y's tangent is zero
    np.testing.assert_array_equal(tangent, np.full(8, 2.0))

    @op.def_transpose_rule
    def transpose(cts, x, y, *, outs):  # type: ignore[no-untyped-def]
        (ct,) = cts
        return [2.0 * ct if ad.is_undefined_primal(x) else None, ct if ad.is_undefined_primal(y) else None]

    np.testing.assert_array_equal(jax.grad(lambda a: op(a, y).sum())(X), np.full(8, 2.0))


def test_per_input_jvp_rules_of_the_wrong_count_or_arity_name_the_primitive() -> None:
    op = XLACustomKernel(fresh("rules_count"), outs=lambda x, y: jax.ShapeDtypeStruct(x.shape, x.dtype))
    op.def_kernel("plain", "cpu", lambda outs: lambda x, y: (x + y,))
    y = np.ones(8, np.float32)
    with pytest.raises(TypeError, match=r"def_jvp_rule2\('rules_count.*rule 1 must be callable or None"):
        op.def_jvp_rule2(None, 3)
    op.def_jvp_rule2(lambda t, x, y, *, outs: [t])  # one rule for two inputs
    with pytest.raises(ValueError, match=r"rules_count.*1 rule\(s\) for 2 input\(s\)"):
        jax.jvp(lambda a: op(a, y), (X,), (np.ones(8, np.float32),))
    op.def_jvp_rule2(lambda t, x, y, *, outs: [t, t], None)  # two tangents for one result
    with pytest.raises(TypeError, match=r"rule for input 0 of primitive 'rules_count.*list of 1 tangents"):
        jax.jvp(lambda a: op(a, y), (X,), (np.ones(8, np.float32),))


def test_rules_written_against_the_raw_primitive_parameters_work() -> None:
    # 0.2.1-style rules take **params and bind the JAX primitive with them directly.
    op = XLACustomKernel(fresh("raw"))
    op.def_kernel("plain", "cpu", lambda outs, k: lambda x: (x * k,))

    def jvp(primals, tangents, **params):  # type: ignore[no-untyped-def]
        return op.primitive.bind(*primals, **params), op.primitive.bind(*tangents, **params)

    def batch(args, axes, **params):  # type: ignore[no-untyped-def]
        (x,), (axis,) = args, axes
        outs = tuple(jax.core.ShapedArray((x.shape[axis], *o.shape), o.dtype) for o in params.pop("outs"))
        return op.primitive.bind(jnp.moveaxis(x, axis, 0), outs=outs, **params), [0]

    op.def_jvp_rule(jvp)
    op.def_batching_rule(batch)
    _, tangent = jax.jvp(lambda a: op(a, outs=SPEC, k=3.0), (X,), (np.ones(8, np.float32),))
    np.testing.assert_array_equal(tangent, np.full(8, 3.0))
    xs = np.stack([X, X + 1]).T  # eight rows of two
    out = jax.vmap(lambda a: op(a, outs=jax.ShapeDtypeStruct((2,), jnp.float32), k=2.0), in_axes=0)(xs)
    np.testing.assert_array_equal(out, xs * 2)


# -- registry and tags ---------------------------------------------------------------------------


def test_registry_tags_and_duplicate_names() -> None:
    name = fresh("reg")
    op = XLACustomKernel(name)
    op.def_tags("csr", "binary")
    other = XLACustomKernel(fresh("reg"))
    other.def_tags("csr")
    assert get_registry()[name] is op
    assert name in get_all_primitive_names() and get_all_primitive_names() == sorted(
        get_all_primitive_names()
    )
    assert op.tags == {"csr", "binary"}
    assert get_primitives_by_tags({"csr", "binary"}).get(name) is op
    assert other.name in get_primitives_by_tags("csr") and other.name not in get_primitives_by_tags(
        {"binary"}
    )
    with pytest.warns(UserWarning, match=rf"XLACustomKernel named '{name}' is already registered"):
        newer = XLACustomKernel(name)
    assert get_registry()[name] is newer
    with pytest.raises(TypeError, match="tags must be non-empty strings"):
        op.def_tags("csr", 3)  # type: ignore[arg-type]
    assert brainevent.get_registry is get_registry and brainevent.XLACustomKernel is XLACustomKernel


def test_def_call_is_what_call_and_benchmark_use() -> None:
    op = XLACustomKernel(fresh("call"))
    with pytest.raises(KernelCallError, match=r"no call function; define one with op.def_call"):
        op.call(X)
    op.def_kernel("a", "cpu", adds(1.0))

    @op.def_call
    def add(x: Any, *, backend: str | None = None) -> Any:
        return op(x, outs=jax.ShapeDtypeStruct(x.shape, x.dtype), backend=backend)

    np.testing.assert_array_equal(op.call(X), X + 1)


# -- benchmark ------------------------------------------------------------------------------------

N = 100_000
LOOPS = 300


def fast_double(outs: Any) -> Any:
    return lambda x: (x * 2.0,)


def slow_double(outs: Any) -> Any:
    # The same result the long way: LOOPS passes over the array (exact for small integers).
    def kernel(x: Any) -> Any:
        total = jax.lax.fori_loop(0, LOOPS, lambda i, acc: acc + x, jnp.zeros_like(x))
        return (total / (LOOPS / 2.0),)

    return kernel


def speed_pair() -> XLACustomKernel:
    op = XLACustomKernel(fresh("bench"), outs=lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype))
    op.def_kernel("slow", "cpu", slow_double)  # the default, until benchmarked
    op.def_kernel("fast", "cpu", fast_double)

    @op.def_benchmark_data
    def data(*, platform: str) -> list[BenchmarkConfig]:
        x = np.arange(N, dtype=np.float32) % 1000
        return [BenchmarkConfig("n=100k", (x,), data_kwargs={"n": N})]

    return op


def test_benchmark_times_every_backend_and_can_make_the_fastest_the_default() -> None:
    op = speed_pair()
    result = op.benchmark(platform="cpu", n_warmup=1, n_runs=5, set_default=True)
    by_backend = {r.backend: r for r in result.records}
    assert set(by_backend) == {"slow", "fast"}
    assert all(r.success and r.rounds == 5 and r.noise_ms >= 0 for r in by_backend.values())
    assert by_backend["fast"].median_ms < by_backend["slow"].median_ms
    assert result.fastest().backend == "fast" and result.best_backend() == "fast"  # type: ignore[union-attr]
    assert result.chosen == "fast" and op.get_default("cpu") == "fast"
    table = result.table()
    assert re.search(r"n=100k\s+cpu\s+fast \*", table) and "slow" in table and "median ms" in table
    assert "default backend set to 'fast'" in table
    assert result.to_dict()["chosen"] == "fast"


def test_benchmark_records_failures_and_warns_on_differing_results() -> None:
    op = speed_pair()
    op.def_kernel("broken", "cpu", boom)
    op.def_kernel("wrong", "cpu", lambda outs: lambda x: (x * 3.0,))
    x = np.arange(16, dtype=np.float32)
    configs = [BenchmarkConfig("small", (x,))]
    with pytest.warns(UserWarning, match=r"backend 'wrong' gives results that differ from 'slow'"):
        result = op.benchmark(
            platform="cpu", n_warmup=0, n_runs=2, configs=configs, backends=["slow", "broken", "wrong"]
        )
    failed = [r for r in result.records if not r.success]
    assert [r.backend for r in failed] == ["broken"] and "boom" in (failed[0].error or "")
    assert "FAILED" in result.table()
    with pytest.raises(CompileError, match="boom"):
        op.benchmark(platform="cpu", n_runs=1, configs=configs, backends=["broken"], catch_errors=False)


def test_benchmark_verbose_logs_each_timing_and_the_table_to_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    op = speed_pair()
    op.benchmark(platform="cpu", n_warmup=0, n_runs=1, configs=[BenchmarkConfig("tiny", (X,))], verbose=True)
    err = capsys.readouterr().err
    assert re.search(r"\[brainevent\] .*\[cpu\|slow\] tiny: median", err)
    assert re.search(r"\[brainevent\] .*\[cpu\|fast\] tiny: median", err)
    assert "Benchmark of" in err and "x best" in err


def test_benchmark_needs_data_and_known_backends() -> None:
    op = XLACustomKernel(fresh("bench")).def_kernel("a", "cpu", adds(1.0))
    with pytest.raises(KernelCallError, match=r"no benchmark data: define op.def_benchmark_data"):
        op.benchmark(platform="cpu")
    with pytest.raises(
        KernelCallError, match=r"cannot benchmark backends \['zz'\] on 'cpu': it defines \['a'\]"
    ):
        op.benchmark(platform="cpu", backends=["zz"], configs=[BenchmarkConfig("c", (X,))])
    with pytest.raises(KernelCallError, match="cannot benchmark backends"):
        op.benchmark(platform="tpu", configs=[BenchmarkConfig("c", (X,))])


def test_benchmark_function_times_one_function() -> None:
    mean, std, best, worst, output = brainevent.benchmark_function(jax.jit(lambda x: x + 1), 1, 3, data=(X,))
    assert 0 < best <= mean <= worst and std >= 0
    np.testing.assert_array_equal(output, X + 1)
