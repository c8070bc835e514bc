"""Launch configuration of numba_cuda_kernel: pure Python, no Numba needed."""

from __future__ import annotations

import subprocess
import sys

import pytest

from brainevent.launchers.launch_config import resolve_launch


def test_grid_and_block_are_padded_to_three_dims() -> None:
    config = resolve_launch(4, 256, None, 256, 0)
    assert config.grid == (4, 1, 1) and config.block == (256, 1, 1) and config.shared_mem == 0
    config = resolve_launch((2, 3), (16, 8, 2), None, 256, 128)
    assert config.grid == (2, 3, 1) and config.block == (16, 8, 2) and config.shared_mem == 128


@pytest.mark.parametrize(
    ("dims", "tpb", "grid", "block"),
    [
        (1024, 256, (4, 1, 1), (256, 1, 1)),
        (1000, 256, (4, 1, 1), (256, 1, 1)),
        ((1000,), 128, (8, 1, 1), (128, 1, 1)),
        ((64, 10), 256, (2, 2, 1), (32, 8, 1)),
        ((64, 8, 5), 256, (2, 2, 3), (32, 4, 2)),
    ],
)
def test_launch_dims_cover_every_thread(dims: object, tpb: int, grid: tuple, block: tuple) -> None:
    config = resolve_launch(None, None, dims, tpb, 0)
    assert config.grid == grid and config.block == block
    assert config.block[0] * config.block[1] * config.block[2] <= tpb


@pytest.mark.parametrize(
    ("grid", "block", "launch_dims", "message"),
    [
        (None, None, None, "launch configuration is required"),
        (4, None, None, "block is missing"),
        (None, 256, None, "grid is missing"),
        (4, 256, 1024, "not both"),
        (None, 256, 1024, "not both"),
        (0, 256, None, "positive"),
        (4, 0, None, "positive"),
        ((1, 2, 3, 4), 32, None, "1, 2 or 3"),
        (4, (64, 32), None, "more than 1024"),
        (None, None, (1, 2, 3, 4), "1, 2 or 3"),
        (None, None, 0, "positive"),
        (4.0, 256, None, "positive integers"),
    ],
)
def test_bad_launch_configurations_raise_value_error(
    grid: object, block: object, launch_dims: object, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        resolve_launch(grid, block, launch_dims, 256, 0)


@pytest.mark.parametrize(
    ("tpb", "shared", "message"),
    [
        (0, 0, r"threads_per_block must be an int in \[1, 1024\], got 0$"),
        (2048, 0, r"threads_per_block must be an int in \[1, 1024\], got 2048$"),
        (True, 0, r"threads_per_block must be an int in \[1, 1024\], got True$"),
        (256, -1, r"shared_mem must be a non-negative int \(bytes\), got -1$"),
    ],
)
def test_bad_threads_or_shared_memory(tpb: object, shared: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        resolve_launch(None, None, 1024, tpb, shared)  # type: ignore[arg-type]


def test_import_brainevent_does_not_import_numba() -> None:
    code = (
        "import sys, brainevent; brainevent.numba_cuda_kernel; brainevent.numba_kernel; "
        "print('numba' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_empty_launches_are_accepted_only_when_asked_for() -> None:
    for grid, launch_dims in ((None, 0), (None, (16, 0)), (0, None)):
        block = 128 if grid is not None else None
        config = resolve_launch(grid, block, launch_dims, 256, 0, allow_empty=True)
        assert config.empty
    assert not resolve_launch(None, None, 5, 256, 0, allow_empty=True).empty
    with pytest.raises(ValueError, match="non-negative"):
        resolve_launch(None, None, -1, 256, 0, allow_empty=True)
    with pytest.raises(ValueError, match="block must hold positive"):
        resolve_launch(4, 0, None, 256, 0, allow_empty=True)


@pytest.mark.parametrize("method", ["expand_dims", "broadcast_all"])
def test_a_batching_vmap_method_needs_launch_dims(method: str) -> None:
    with pytest.raises(ValueError, match="needs launch_dims"):
        resolve_launch(4, 256, None, 256, 0, vmap_method=method)
    assert resolve_launch(4, 256, None, 256, 0, vmap_method="sequential").grid == (4, 1, 1)
    assert resolve_launch(None, None, 64, 256, 0, vmap_method=method).grid == (1, 1, 1)
