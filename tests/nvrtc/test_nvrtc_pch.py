"""Precompiled headers within a process: a later kernel with the same first includes starts from
the PCH an earlier one made; a PCH whose header changed is never used; the heap grows once to
what NVRTC asks for; a source that includes nothing is compiled without a PCH or a time trace."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture(autouse=True)
def _nvrtc(monkeypatch: pytest.MonkeyPatch) -> None:
    from brainevent.cache import deps
    from brainevent.errors import ToolchainError
    from brainevent.nvrtc.process import nvrtc_info

    try:
        nvrtc_info()
    except ToolchainError as exc:
        pytest.skip(f"needs libnvrtc (pip install nvidia-cuda-nvrtc): {exc}")
    monkeypatch.setattr(deps, "RACY_WINDOW_NS", 0)  # headers written by the test are trusted at once


def _kernel(name: str) -> str:
    return f'#include "value.h"\nextern "C" __global__ void {name}(float* o) {{ o[0] = VALUE; }}\n'


def _notes(seen: list[str]) -> object:
    """``pch.account`` that also keeps each log as NVRTC wrote it, PCH notes included."""
    from brainevent.nvrtc import pch

    original = pch.account

    def account(log: str, read: list[str] | None, started_ns: int) -> tuple[str, list[str] | None]:
        seen.append(log)
        return original(log, read, started_ns)

    return account


def test_a_later_kernel_uses_the_pch_and_records_its_headers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import brainevent.nvrtc as nv
    from brainevent.cache.manifest import Manifest
    from brainevent.nvrtc import pch

    (tmp_path / "value.h").write_text("#pragma once\n#define VALUE 3.5f\n")
    seen: list[str] = []
    monkeypatch.setattr(pch, "account", _notes(seen))
    cache = tmp_path / "cache"
    first = nv.compile(_kernel("k1"), "k1", "compute_90", include_dirs=[tmp_path], build_directory=str(cache))
    later = nv.compile(_kernel("k2"), "k2", "compute_90", include_dirs=[tmp_path], build_directory=str(cache))
    assert "creating precompiled header" in seen[0] and "using precompiled header" in seen[1], seen
    assert "precompiled" not in first.log + later.log  # NVRTC's notes are not the user's log
    assert b"1080033280" in later.code  # 3.5f's bits, from the PCH
    manifests = [Manifest.load(d) for d in (cache / "v1" / "nvrtc").iterdir() if d.is_dir()]
    # The kernel that used the PCH read value.h through it: an edit must rebuild it too.
    assert all(str(tmp_path / "value.h") in m.dependencies for m in manifests if m), manifests


def test_a_pch_whose_header_changed_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import brainevent.nvrtc as nv
    from brainevent.nvrtc import pch

    header = tmp_path / "value.h"
    header.write_text("#pragma once\n#define VALUE 3.5f\n")
    seen: list[str] = []
    monkeypatch.setattr(pch, "account", _notes(seen))
    cache = str(tmp_path / "cache")
    nv.compile(_kernel("k1"), "k1", "compute_90", include_dirs=[tmp_path], build_directory=cache)
    header.write_text("#pragma once\n#define VALUE 4.5f   \n")  # NVRTC itself would use the old PCH
    later = nv.compile(_kernel("k2"), "k2", "compute_90", include_dirs=[tmp_path], build_directory=cache)
    assert "using precompiled header" not in seen[1], seen
    assert b"1083179008" in later.code and b"1080033280" not in later.code  # 4.5f, not 3.5f


def test_a_source_that_includes_nothing_gets_no_pch_nor_trace(tmp_path: Path) -> None:
    from brainevent.nvrtc.source import KernelSource

    assert KernelSource.read('extern "C" __global__ void k(float* o) { o[0] = 1; }').includes_nothing()
    joined = '#inc\\\nlude "x.h"\nextern "C" __global__ void k(float* o) {}'  # a spliced line
    assert not KernelSource.read(joined).includes_nothing()
    pre = KernelSource.read('extern "C" __global__ void k(float* o) {}', options=["--pre-include=x.h"])
    assert not pre.includes_nothing()


HEAP = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import worker
worker.PCH_HEAP = 1 << 20  # far too small: the PCH runs out of heap, then is made again
lib, hello = worker.bind(sys.argv[2])
source = b'#include <cuda_fp16.h>\nextern "C" __global__ void k(__half* o) { o[0] = __float2half(1.0f); }\n'
reply = worker.compile_program(lib, {
    "source": source, "name": "k.cu", "names": [], "kind": "ptx", "cwd": sys.argv[3],
    "options": ["--gpu-architecture=compute_90", *("-I" + d for d in json.loads(sys.argv[4]))],
    "pch": ["-pch", "--pch-dir=" + sys.argv[3]],
})
print(json.dumps({"pch": hello["pch"], "result": reply["result"], "log": reply["log"].decode()}))
"""


def test_a_pch_that_ran_out_of_heap_is_made_again_with_the_heap_nvrtc_asks_for(tmp_path: Path) -> None:
    from brainevent.nvrtc import worker
    from brainevent.nvrtc.toolkit import locate_nvrtc, runtime_include_dirs

    if not runtime_include_dirs():
        pytest.skip("needs the CUDA runtime headers")
    args = [str(Path(worker.__file__).parent), locate_nvrtc().path, str(tmp_path)]
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", HEAP, *args, json.dumps(runtime_include_dirs())],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout)
    assert reply["pch"] and reply["result"] == 0, reply
    assert "creating precompiled header" in reply["log"] and "insufficient" not in reply["log"], reply
