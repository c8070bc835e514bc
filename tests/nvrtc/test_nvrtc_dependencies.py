"""What an NVRTC build read comes from NVRTC itself (the header events of its time trace):
every include path in ``options`` or ``include_dirs``, headers named by macros, raw bytes
hashed; a hit, in this process or a later one, re-checks each of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brainevent.errors import CompileError

from .kernels import VECTOR_ADD

READS_V = '#include "v.h"\nextern "C" __global__ void k(int* o) { o[threadIdx.x] = VAL; }\n'
READS_MACRO_NAMED = (
    '#define HDR "v.h"\n#include HDR\nextern "C" __global__ void k(int* o) { o[threadIdx.x] = VAL; }\n'
)


@pytest.fixture(scope="module", autouse=True)
def _nvrtc() -> None:
    import brainevent.nvrtc as nv
    from brainevent.errors import ToolchainError

    try:
        nv.compile(VECTOR_ADD, "add", "sm_80")
    except ToolchainError as exc:  # the test extra installs nvidia-cuda-nvrtc
        pytest.skip(f"needs libnvrtc (pip install nvidia-cuda-nvrtc): {exc}")


def _compile(source: str, cache: Path, *, fresh: bool = True, **kw: object) -> tuple[bytes, bool]:
    """``(cubin, built now)``; ``fresh``: as a new process would (this process's memo dropped)."""
    from brainevent.nvrtc.cache import Request, compile_cached, forget_process_memo
    from brainevent.nvrtc.source import KernelSource

    if fresh:
        forget_process_memo()
    request = Request(KernelSource.read(source, **kw), ("k",), "sm_80")  # type: ignore[arg-type]
    compiled, built = compile_cached(request, build_directory=str(cache))
    return compiled.code, built


def _value_header(directory: Path, value: int) -> Path:
    directory.mkdir(exist_ok=True)
    header = directory / "v.h"
    header.write_text(f"#define VAL {value}\n")
    return header


@pytest.mark.parametrize(
    "options",
    [["-Iinc"], ["-I", "inc"], ["--include-path=inc"], ["--include-path", "inc"]],
    ids=["-Idir", "-I dir", "--include-path=dir", "--include-path dir"],
)
def test_a_header_found_through_an_include_option_is_rechecked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    header = _value_header(tmp_path / "inc", 1)
    cache = tmp_path / "cache"
    first, built = _compile(READS_V, cache, options=options)
    assert built
    assert _compile(READS_V, cache, options=options) == (first, False)
    header.write_text("#define VAL 22\n")
    second, built = _compile(READS_V, cache, options=options)
    assert built, "an edit of a header NVRTC read through options= must rebuild"
    assert second != first


def test_a_header_named_by_a_macro_is_rechecked(tmp_path: Path) -> None:
    header = _value_header(tmp_path / "inc", 1)
    cache = tmp_path / "cache"
    first, built = _compile(READS_MACRO_NAMED, cache, include_dirs=[tmp_path / "inc"])
    assert built
    assert not _compile(READS_MACRO_NAMED, cache, include_dirs=[tmp_path / "inc"])[1]
    header.write_text("#define VAL 22\n")
    second, built = _compile(READS_MACRO_NAMED, cache, include_dirs=[tmp_path / "inc"])
    assert built and second != first


def test_an_edit_of_a_byte_that_is_not_utf8_rebuilds(tmp_path: Path) -> None:
    header = _value_header(tmp_path / "inc", 1)
    header.write_bytes(b"// caf\xe9\n#define VAL 1\n")
    cache = tmp_path / "cache"
    assert _compile(READS_V, cache, include_dirs=[tmp_path / "inc"])[1]
    assert not _compile(READS_V, cache, include_dirs=[tmp_path / "inc"])[1]
    header.write_bytes(b"// caf\xe8\n#define VAL 1\n")  # one Latin-1 byte for another
    assert _compile(READS_V, cache, include_dirs=[tmp_path / "inc"])[1]


def test_an_edit_between_two_compiles_of_one_process_is_seen(tmp_path: Path) -> None:
    header = _value_header(tmp_path / "inc", 1)
    cache = tmp_path / "cache"
    first, _ = _compile(READS_V, cache, include_dirs=[tmp_path / "inc"])
    assert _compile(READS_V, cache, fresh=False, include_dirs=[tmp_path / "inc"]) == (first, False)
    header.write_text("#define VAL 333\n")
    second, built = _compile(READS_V, cache, fresh=False, include_dirs=[tmp_path / "inc"])
    assert built and second != first


def test_the_entry_lists_the_files_nvrtc_read(tmp_path: Path) -> None:
    header = _value_header(tmp_path / "inc", 1)
    cache = tmp_path / "cache"
    _compile(READS_MACRO_NAMED, cache, include_dirs=[tmp_path / "inc"])
    (manifest,) = (cache / "v1" / "nvrtc").glob("*/manifest.json")
    read = json.loads(manifest.read_text())["dependencies"]
    assert list(read) == [str(header)], read  # NVRTC's built-in header is no file


def test_an_inline_source_does_not_read_headers_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entry could not say which directory it was: only include_dirs and options are searched."""
    monkeypatch.chdir(tmp_path)
    _value_header(tmp_path, 1)
    with pytest.raises(CompileError, match=r'(cannot|could not) open source file "v\.h"'):
        _compile(READS_V, tmp_path / "cache")
