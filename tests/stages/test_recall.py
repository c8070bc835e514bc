"""Recalled loads (stages/recall.py): a call an earlier process made with the same arguments in
the same environment is served from what that load found, and anything that could change the
outcome sends the call through the full load instead. Each load runs in a fresh process with
real g++, as a program's first load would."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from brainevent.cache import RECALL_SUFFIX, sealed, unsealed
from brainevent.stages.recall import call_of

SRC_DIR = str(Path(__file__).resolve().parents[2] / "src")

KERNEL = r"""
#include "brainevent/common.h"
// @BE recall_scale arg ret
void recall_scale(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = SCALE * x.data_ptr<float>()[i];
}
"""

PROBE = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import brainevent
    scale = sys.argv[1]
    mod = brainevent.load_cpp_inline(
        name="recall_mod",
        cpp_sources=sys.argv[2].replace("SCALE", scale),
        extra_cflags=["-O2"],
        extra_include_paths=sys.argv[3:] or None,
    )
    y = np.asarray(mod.recall_scale(np.arange(4, dtype=np.float32)))
    print(json.dumps({
        "built_now": mod.built_now,
        "recalled": "brainevent.stages.key" not in sys.modules,
        "y": y.tolist(),
        "targets": dict(mod.targets),
        "path": str(mod.path),
    }))
    """
)


def _load(
    cache: Path, scale: str = "2.0f", kernel: str = KERNEL, include: Path | None = None, **variables: str
) -> dict[str, object]:
    env = dict(os.environ, BRAINEVENT_CACHE_DIR=str(cache), JAX_PLATFORMS="cpu", **variables)
    env["PYTHONPATH"] = SRC_DIR + os.pathsep + env.get("PYTHONPATH", "")
    command = [sys.executable, "-c", PROBE, scale, kernel, *([str(include)] if include else [])]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _records(cache: Path) -> list[Path]:
    return sorted((cache / "v1" / "recall_mod").glob(f"*{RECALL_SUFFIX}"))


def test_the_same_call_is_recalled_and_gives_what_the_full_load_gave(tmp_path: Path) -> None:
    built = _load(tmp_path)
    assert built["built_now"] is True and built["recalled"] is False
    assert len(_records(tmp_path)) == 1
    recalled = _load(tmp_path)
    assert recalled["recalled"] is True and recalled["built_now"] is False
    assert recalled["y"] == [0.0, 2.0, 4.0, 6.0]
    assert (recalled["targets"], recalled["path"]) == (built["targets"], built["path"])


def test_other_sources_are_another_call(tmp_path: Path) -> None:
    _load(tmp_path)
    other = _load(tmp_path, scale="3.0f")
    assert other["built_now"] is True and other["y"] == [0.0, 3.0, 6.0, 9.0]
    assert _load(tmp_path)["y"] == [0.0, 2.0, 4.0, 6.0]  # each call recalls its own module


def test_an_environment_variable_the_options_read_is_part_of_the_call(tmp_path: Path) -> None:
    _load(tmp_path)
    debug = _load(tmp_path, BRAINEVENT_DEBUG="1")  # a debug build: another key
    assert debug["recalled"] is False and debug["built_now"] is True
    assert _load(tmp_path, BRAINEVENT_DEBUG="1")["recalled"] is True


def test_a_changed_compiler_is_not_recalled_past(tmp_path: Path) -> None:
    # CXX names a wrapper script: the call's environment stays the same while the file changes.
    wrapper = tmp_path / "bin" / "g++"
    wrapper.parent.mkdir()
    wrapper.write_text('#!/bin/sh\nexec g++ "$@"\n')
    wrapper.chmod(0o755)
    cache = tmp_path / "cache"
    assert _load(cache, CXX=str(wrapper))["built_now"] is True
    assert _load(cache, CXX=str(wrapper))["recalled"] is True
    wrapper.write_text('#!/bin/sh\n# another compiler now\nexec g++ "$@"\n')
    after = _load(cache, CXX=str(wrapper))
    assert after["recalled"] is False and after["built_now"] is True  # the key names the compiler


def test_a_record_others_could_write_is_ignored(tmp_path: Path) -> None:
    _load(tmp_path)
    (record,) = _records(tmp_path)
    record.chmod(0o666)
    result = _load(tmp_path)
    assert result["recalled"] is False and result["y"] == [0.0, 2.0, 4.0, 6.0]
    (record,) = _records(tmp_path)  # the full load wrote it again, private
    assert record.stat().st_mode & 0o077 == 0
    assert _load(tmp_path)["recalled"] is True


def test_a_record_whose_entry_is_gone_falls_back_to_a_build(tmp_path: Path) -> None:
    built = _load(tmp_path)
    shutil.rmtree(Path(str(built["path"])).parent)
    again = _load(tmp_path)
    assert again["recalled"] is False and again["built_now"] is True
    assert again["y"] == [0.0, 2.0, 4.0, 6.0]


def _edit_record(record: Path, **fields: object) -> bytes:
    """The record's sealed bytes with ``fields`` changed, sealed again (as brainevent would write it)."""
    data = unsealed(record.read_bytes())
    assert data is not None
    return sealed({**data, **fields})


@pytest.mark.parametrize(
    "damage",
    [
        lambda record: json.dumps({"schema": 1, "call": "0" * 64}).encode(),  # the first format
        lambda record: record.read_bytes().replace(b'"openmp": false', b'"openmp": true'),  # seal broken
        lambda record: record.read_bytes()[:-10],  # truncated
        lambda record: _edit_record(record, schema=1),  # sealed, of another schema
        lambda record: _edit_record(record, entry="../elsewhere"),  # a name outside the module's directory
        lambda record: _edit_record(record, library=7),  # a field of the wrong type
        lambda record: _edit_record(record, files=7),  # a field read after the files' checks
        lambda record: sealed({k: v for k, v in unsealed(record.read_bytes()).items() if k != "stamps"}),
        lambda record: sealed({"schema": 2, "call": unsealed(record.read_bytes())["call"]}),  # fields missing
    ],
)
def test_a_damaged_or_foreign_record_is_ignored(tmp_path: Path, damage: object) -> None:
    _load(tmp_path)
    (record,) = _records(tmp_path)
    record.write_bytes(damage(record))  # type: ignore[operator]
    result = _load(tmp_path)
    assert result["recalled"] is False and result["built_now"] is False
    assert result["y"] == [0.0, 2.0, 4.0, 6.0]
    assert _load(tmp_path)["recalled"] is True  # the full load sealed a new one


def test_a_replaced_library_is_not_recalled_past(tmp_path: Path) -> None:
    library = Path(str(_load(tmp_path)["path"]))
    copy = library.with_name(".copy")
    shutil.copy2(library, copy)  # the same bytes, size and mtime: another file all the same
    os.replace(copy, library)
    again = _load(tmp_path)
    assert again["recalled"] is False and again["built_now"] is False  # the full hit accepts the copy
    assert _load(tmp_path)["recalled"] is True


def test_a_changed_header_the_compiler_read_is_not_recalled_past(tmp_path: Path) -> None:
    include = tmp_path / "include"
    include.mkdir()
    header = include / "recall_scale.h"
    header.write_text("#define SCALE 2.0f\n")
    os.utime(header, (1e9, 1e9))  # long before the build: its record is trusted by size and mtime
    kernel, cache = '#include "recall_scale.h"\n' + KERNEL, tmp_path / "cache"
    assert _load(cache, "SCALE", kernel, include)["built_now"] is True
    assert _load(cache, "SCALE", kernel, include)["recalled"] is True
    header.write_text("#define SCALE 3.0f\n")  # the same size
    after = _load(cache, "SCALE", kernel, include)
    assert after["recalled"] is False and after["built_now"] is True
    assert after["y"] == [0.0, 3.0, 6.0, 9.0]


def test_the_digest_tells_apart_what_the_loader_tells_apart() -> None:
    def digest(**arguments: object) -> str | None:
        call = call_of("load_cuda_inline", "cuda", {"name": "m", "cuda_sources": "x", **arguments})
        return None if call is None else call.digest

    # A tuple (8, 6) is one arch, a list [8, 6] two: their digests differ.
    assert digest(compute_capability=(8, 6)) != digest(compute_capability=[8, 6])
    assert digest(compute_capability="sm_80") != digest(compute_capability="sm_90")
    assert digest(compute_capability="sm_80") == digest(compute_capability="sm_80")


@pytest.mark.parametrize(
    "arguments",
    [
        {"verbose": True},
        {"force_rebuild": True},
        {"extra_libraries": ["cublas"]},
        {"name": "../elsewhere"},
        {"name": type("Name", (str,), {})("m")},  # a str subclass may behave otherwise
        {"extra_include_paths": [Path("/tmp")]},
    ],
)
def test_calls_that_are_never_recalled(arguments: dict[str, object]) -> None:
    assert call_of("load_cpp_inline", "cpu", {"name": "m", "cpp_sources": "x", **arguments}) is None


CUDA_PROBE = textwrap.dedent(
    """
    import json, sys
    import jax, jax.numpy as jnp, numpy as np
    import brainevent
    jax.devices()
    source = r'''
    #include "brainevent/common.h"
    __global__ void triple(const float* x, float* y, int64_t n) {
        int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
        if (i < n) y[i] = 3.0f * x[i];
    }
    // @BE recall_triple arg ret stream
    void recall_triple(const BE::Tensor x, BE::Tensor out, cudaStream_t stream) {
        int64_t n = x.numel();
        triple<<<(n + 255) / 256, 256, 0, stream>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
    }
    '''
    mod = brainevent.load_cuda_inline(name="recall_cu", cuda_sources=source, compute_capability=sys.argv[1])
    x = jnp.arange(1000, dtype=jnp.float32)
    y = jax.jit(mod.recall_triple)(x)
    assert np.allclose(np.asarray(y), 3 * np.arange(1000)), y
    print(json.dumps({"built_now": mod.built_now, "recalled": "brainevent.stages.key" not in sys.modules}))
    """
)


@pytest.mark.gpu
def test_a_cuda_load_is_recalled_on_the_gpu(tmp_path: Path) -> None:
    from brainevent.toolchain.cuda_arch import visible_archs

    arch = visible_archs()[0].sm
    env = dict(os.environ, BRAINEVENT_CACHE_DIR=str(tmp_path))
    env["PYTHONPATH"] = SRC_DIR + os.pathsep + env.get("PYTHONPATH", "")
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", CUDA_PROBE, arch], env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr[-3000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert runs[0] == {"built_now": True, "recalled": False}
    assert runs[1] == {"built_now": False, "recalled": True}


def test_clearing_the_cache_drops_the_records_of_what_it_removed(tmp_path: Path) -> None:
    from brainevent.cache import admin

    _load(tmp_path)
    assert len(_records(tmp_path)) == 1
    assert admin.clear(tmp_path) == (1, 0)
    assert _records(tmp_path) == []


@pytest.mark.parametrize(
    "rows",
    [
        {"recall_scale": {"params": 7}},  # not a list of parameter rows
        {"recall_scale": {"params": [["arg", "x"]]}},  # a row too short
        {"recall_scale": {"params": [["weird", "x", "float32", "float"]]}},  # an unknown role
        {"recall_scale": []},  # not an object
    ],
)
def test_a_record_with_malformed_function_rows_falls_back_to_the_full_load(
    tmp_path: Path, rows: dict[str, object]
) -> None:
    _load(tmp_path)
    (record,) = _records(tmp_path)
    record.write_bytes(_edit_record(record, functions=rows))
    result = _load(tmp_path)
    assert result["recalled"] is False and result["y"] == [0.0, 2.0, 4.0, 6.0]
