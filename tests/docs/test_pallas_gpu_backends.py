"""What the Pallas page says JAX does with a ``pl.pallas_call`` on an NVIDIA GPU, checked by
lowering the page's kernel, with its block size, for CUDA (lowering needs no GPU): Triton when
its compiler parameters are given (deprecated from JAX 0.11), else Mosaic GPU where JAX can
import it (with a deprecation of ``pallas_call`` for it), and no lowering at all where it
cannot."""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "pallas-tutorial.md"
pytestmark = pytest.mark.skipif(not PAGE.exists(), reason="not applicable: no docs/, not a source checkout")


def _jax_version() -> tuple[int, int]:
    major, minor = jax.__version__.split(".")[:2]
    return int(major), int(minor)


def _lower(**pallas_options: Any) -> tuple[str, list[str]]:
    """The page's axpy kernel lowered for CUDA: its text and the deprecations JAX gave."""
    from jax.experimental import pallas as pl

    block = int(re.search(r"^BLOCK = (\d+)", PAGE.read_text(), re.M).group(1))  # type: ignore[union-attr]

    def axpy_kernel(x_ref: Any, y_ref: Any, o_ref: Any) -> None:
        o_ref[...] = 2.0 * x_ref[...] + y_ref[...]

    def axpy(x: Any, y: Any) -> Any:
        spec = pl.BlockSpec((block,), lambda i: (i,))
        out = jax.ShapeDtypeStruct(x.shape, x.dtype)
        grid = (pl.cdiv(x.shape[0], block),)
        call = pl.pallas_call(
            axpy_kernel, out_shape=out, grid=grid, in_specs=[spec, spec], out_specs=spec, **pallas_options
        )
        return call(x, y)

    x = jax.ShapeDtypeStruct((4096,), jnp.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        text = jax.jit(axpy).trace(x, x).lower(lowering_platforms=("cuda",)).as_text()
    return text, [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]


def test_triton_lowers_the_pages_blocks_when_asked_for() -> None:
    plt = pytest.importorskip("jax.experimental.pallas.triton")
    text, deprecations = _lower(compiler_params=plt.CompilerParams())
    assert "__gpu$xla.gpu.triton" in text
    deprecated = any("Pallas Triton backend is deprecated" in d for d in deprecations)
    assert deprecated == (_jax_version() >= (0, 11)), deprecations


def test_the_default_is_mosaic_gpu_where_jax_can_import_it() -> None:
    try:
        import jax.experimental.mosaic.gpu  # noqa: F401
    except ImportError:  # e.g. JAX 0.10 without absl-py, as the page says
        with pytest.raises(ValueError, match="Cannot lower pallas_call on platform: gpu"):
            _lower()
        return
    text, deprecations = _lower()
    assert "mosaic_gpu" in text
    assert any("pl.pallas_call`` for Mosaic GPU kernels is deprecated" in d for d in deprecations)
