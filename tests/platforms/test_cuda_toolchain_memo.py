"""The CUDA platform keys a load from the remembered search (toolchain/memo.py), checked by
one stat of nvcc: a replaced nvcc is searched again, and a build never runs under the key
of another nvcc than the one it compiles with."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import brainevent
from brainevent.errors import ToolchainError
from brainevent.fileio import file_identity
from brainevent.platforms.cuda import CudaPlatform, _search_context
from brainevent.toolchain.memo import MEMO_NAME

CU = r"""
#include "brainevent/common.h"
__global__ void fill(float* y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = 1.0f;
}
// @BE memo_fill ret stream
void memo_fill(BE::Tensor out, cudaStream_t stream) {
    fill<<<1, 256, 0, stream>>>(out.data_ptr<float>(), out.numel());
}
"""


def _entry(cache: Path) -> dict[str, object]:
    entries = json.loads((cache / MEMO_NAME).read_text())["entries"]
    return entries[f"cuda-toolchain|{_search_context('sm_80')}"]


@pytest.mark.nvcc
def test_the_search_is_remembered_and_checked_by_a_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAINEVENT_CACHE_DIR", str(tmp_path))
    first = CudaPlatform("sm_80")
    known = _entry(tmp_path)
    assert known["archs"] == ["sm_80"] and known["identity"] == file_identity(str(known["nvcc"]))
    second = CudaPlatform("sm_80")  # from the memo: nvcc is found on demand only
    assert second._nvcc is None and second.key_inputs(None) == first.key_inputs(None)  # type: ignore[arg-type]
    assert second.nvcc.path == first.nvcc.path


@pytest.mark.nvcc
def test_a_stale_memo_never_keys_a_build_with_another_nvcc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAINEVENT_CACHE_DIR", str(tmp_path))
    CudaPlatform("sm_80")
    memo = tmp_path / MEMO_NAME
    data = json.loads(memo.read_text())
    other = tmp_path / "other-nvcc"  # an unchanged file the memo names, not what a search finds
    shutil.copy(__file__, other)
    known = data["entries"][f"cuda-toolchain|{_search_context('sm_80')}"]
    known.update(nvcc=str(other), identity=file_identity(other))
    memo.write_text(json.dumps(data))
    with pytest.raises(ToolchainError, match="nvcc changed during this load"):
        brainevent.load_cuda_inline(
            name="memo_fill", cuda_sources=CU, compute_capability="sm_80", auto_register=False
        )
    assert _entry(tmp_path)["nvcc"] != str(other)  # the memo now names what the search finds
    mod = brainevent.load_cuda_inline(
        name="memo_fill", cuda_sources=CU, compute_capability="sm_80", auto_register=False
    )
    assert mod.built_now
