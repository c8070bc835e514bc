"""numba_cuda_callable: errors anywhere, its handler built by the host compiler, real launches on a GPU."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent

OUT = jax.ShapeDtypeStruct((1024,), jnp.float32)


def test_without_numba_cuda_raises_import_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "numba.cuda", None)
    monkeypatch.setitem(sys.modules, "numba.cuda.dispatcher", None)
    with pytest.raises(ImportError, match="numba-cuda"):
        brainevent.numba_cuda_callable(lambda x, out, stream: None, outs=OUT)


def test_non_callable_and_bad_vmap_method() -> None:
    pytest.importorskip("numba.cuda")
    with pytest.raises(TypeError, match="needs a callable"):
        brainevent.numba_cuda_callable(42, outs=OUT)
    with pytest.raises(ValueError, match="vmap_method"):
        brainevent.numba_cuda_callable(lambda *a: None, outs=OUT, vmap_method="loop")


@pytest.mark.host
def test_handler_builds_with_the_host_compiler_once_per_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from brainevent.numba_bridge import cuda_callable

    monkeypatch.setenv("BRAINEVENT_NVCC", str(tmp_path / "no-nvcc"))  # no nvcc may be asked for
    monkeypatch.setenv("BRAINEVENT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cuda_callable._launchers, "_launchers", {})  # as in a process that built none yet

    launcher = cuda_callable._launchers.get(2, 1)
    # Calls go to the handler, registered on the CUDA platform, not to the CPU-built entry.
    assert launcher.target.startswith("brainevent_numba_callable_2i_1o") and launcher.target.endswith(".run")
    assert hasattr(launcher.library, "be_numba_callable_handler")
    (library,) = (tmp_path / "cache").rglob("libbrainevent_numba_callable_2i_1o.*.so")
    assert b"cudaGetDevice" not in library.read_bytes()  # no CUDA runtime: the driver, dlopen'ed
    # Memoised: with the cache emptied, asking again neither loads nor builds anything.
    shutil.rmtree(tmp_path / "cache")
    assert cuda_callable._launchers.get(2, 1) is launcher
    assert not (tmp_path / "cache").exists()


def _kernels():  # type: ignore[no-untyped-def]
    cuda = pytest.importorskip("numba.cuda")

    @cuda.jit
    def add(x, y, out):  # type: ignore[no-untyped-def]
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] + y[i]

    @cuda.jit
    def scale(x, factor, out):  # type: ignore[no-untyped-def]
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] * factor

    return add, scale


@pytest.mark.gpu
def test_two_kernels_on_xla_stream_match_numpy() -> None:
    add, scale = _kernels()

    def launch(x, y, total, scaled, stream):  # type: ignore[no-untyped-def]
        blocks = (x.size + 255) // 256
        add[blocks, 256, stream](x, y, total)
        scale[blocks, 256, stream](total, 0.5, scaled)  # reads what the first kernel wrote

    f = brainevent.numba_cuda_callable(launch, outs=(OUT, OUT))
    a = jnp.arange(1024, dtype=jnp.float32)
    b = jnp.full(1024, 3.0, dtype=jnp.float32)
    total, scaled = jax.jit(f)(a, b)
    np.testing.assert_array_equal(np.asarray(total), np.arange(1024) + 3.0)
    np.testing.assert_array_equal(np.asarray(scaled), (np.arange(1024) + 3.0) * 0.5)
    total, _ = f(a, b)  # eager
    np.testing.assert_array_equal(np.asarray(total), np.arange(1024) + 3.0)


@pytest.mark.gpu
def test_exception_in_the_callable_surfaces_and_the_process_survives() -> None:
    add, _ = _kernels()
    fail = {"now": True}

    def launch(x, y, out, stream):  # type: ignore[no-untyped-def]
        if fail["now"]:
            raise ValueError("bad launch configuration for this shape")
        add[(x.size + 255) // 256, 256, stream](x, y, out)

    f = jax.jit(brainevent.numba_cuda_callable(launch, outs=OUT))
    a = jnp.ones(1024, dtype=jnp.float32)
    with pytest.raises(
        jax.errors.JaxRuntimeError, match=r"launch.*raised ValueError: bad launch configuration"
    ):
        np.asarray(f(a, a))
    fail["now"] = False
    np.testing.assert_array_equal(np.asarray(f(a, a)), np.full(1024, 2.0))


@pytest.mark.gpu
def test_vmap_and_fori_loop() -> None:
    add, _ = _kernels()

    def launch(x, y, out, stream):  # type: ignore[no-untyped-def]
        add[(x.size + 255) // 256, 256, stream](x, y, out)

    f = brainevent.numba_cuda_callable(launch, outs=OUT, vmap_method="sequential")
    xs = jnp.stack([jnp.arange(1024, dtype=jnp.float32)] * 3) * jnp.arange(3, dtype=jnp.float32)[:, None]
    y = jnp.ones(1024, dtype=jnp.float32)
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(lambda x: f(x, y)))(xs)), np.asarray(xs) + 1)
    loop = jax.jit(lambda x: jax.lax.fori_loop(0, 100, lambda _, v: f(v, y), x))
    np.testing.assert_array_equal(np.asarray(loop(jnp.zeros(1024, jnp.float32))), np.full(1024, 100.0))
