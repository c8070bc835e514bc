"""NVRTC compiles without a GPU and without nvcc: cubins for named architectures, a disk
cache keyed by everything that changes the code, and errors that point at the user's line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from brainevent.errors import CompileError

from .kernels import AXPY, BLOCK_SUM, VECTOR_ADD

SRC = str(Path(__file__).resolve().parents[2] / "src")
ELF = b"\x7fELF"


@pytest.fixture(scope="module", autouse=True)
def _nvrtc() -> None:
    from brainevent.errors import ToolchainError
    from brainevent.nvrtc.process import nvrtc_info

    try:
        nvrtc_info()
    except ToolchainError as exc:  # the test extra installs nvidia-cuda-nvrtc
        pytest.skip(f"needs libnvrtc (pip install nvidia-cuda-nvrtc): {exc}")


def _request(source: str = VECTOR_ADD, names: tuple[str, ...] = ("add",), arch: str = "sm_80", **kw: object):
    from brainevent.nvrtc.cache import Request
    from brainevent.nvrtc.source import KernelSource

    return Request(KernelSource.read(source, **kw), tuple(names), arch)  # type: ignore[arg-type]


def _build(request: object, cache: Path) -> bool:
    """Whether compiling ``request`` ran NVRTC (False: served from the disk cache)."""
    from brainevent.nvrtc.cache import compile_cached, forget_process_memo

    forget_process_memo()  # each call must go to the disk cache, as a new process would
    return compile_cached(request, build_directory=str(cache))[1]  # type: ignore[arg-type]


NO_NVCC = r"""
import shutil, sys
assert shutil.which("nvcc") is None, shutil.which("nvcc")
import brainevent.nvrtc as nv
sys.path.insert(0, sys.argv[2])
from kernels import VECTOR_ADD, AXPY
for arch in ("sm_80", "sm_90"):
    add = nv.compile(VECTOR_ADD, "add", arch, build_directory=sys.argv[1])
    assert add.kind == "cubin" and add.code[:4] == b"\x7fELF", add.code[:8]
    assert add.lowered == {"add": "add"}, add.lowered
    tpl = nv.compile(AXPY, ["axpy<float>", "axpy<double>"], arch, build_directory=sys.argv[1])
    assert tpl.lowered["axpy<float>"] != tpl.lowered["axpy<double>"], tpl.lowered
    assert all(name.startswith("_Z4axpy") for name in tpl.lowered.values()), tpl.lowered
ptx = nv.compile(VECTOR_ADD, "add", "compute_90", build_directory=sys.argv[1])
assert ptx.kind == "ptx" and b".entry add" in ptx.code and b".target sm_90" in ptx.code
print("ok")
"""


def test_tutorial_kernels_compile_to_cubin_and_ptx_with_nvcc_hidden(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "CUDA_PATH")}
    env.update(PYTHONPATH=SRC, PATH=str(tmp_path / "nothing"), BRAINEVENT_NVCC=str(tmp_path / "no-nvcc"))
    done = subprocess.run(
        [sys.executable, "-c", NO_NVCC, str(tmp_path / "cache"), str(Path(__file__).parent)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"


def test_templated_reduction_compiles_per_instantiation(tmp_path: Path) -> None:
    import brainevent.nvrtc as nv

    names = ["block_sum<float, 256>", "block_sum<double, 128>"]
    out = nv.compile(BLOCK_SUM, names, 90, build_directory=str(tmp_path))
    assert out.code[:4] == ELF
    assert len(set(out.lowered.values())) == 2
    assert all(name.encode() in out.code for name in out.lowered.values())


def test_each_keyed_input_changed_alone_misses_and_the_rest_hit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from brainevent.nvrtc import cache as nvrtc_cache

    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "scale.h").write_text("#define SCALE 2.0f\n")
    source = '#include "scale.h"\n' + VECTOR_ADD.replace("x[i] + y[i]", "SCALE * x[i] + y[i]") + AXPY
    base = {
        "source": source,
        "names": ("add",),
        "arch": "sm_80",
        "options": ["-DUNUSED=1"],
        "include_dirs": [str(inc)],
    }

    def request(**changes: object) -> object:
        given = {**base, **changes}
        return _request(
            given["source"], given["names"], given["arch"],  # type: ignore[arg-type]
            options=given["options"], include_dirs=given["include_dirs"],
        )  # fmt: skip

    cache = tmp_path / "cache"
    assert _build(request(), cache)
    assert not _build(request(), cache)  # the same inputs: a hit
    variants = {
        "source": {"source": source + "\n// edited\n"},
        "options": {"options": ["-DUNUSED=2"]},
        "name expressions": {"names": ("add", "axpy<float>")},
        "arch": {"arch": "sm_90"},
    }
    for what, changes in variants.items():
        assert _build(request(**changes), cache), f"changing the {what} alone must rebuild"
        assert not _build(request(), cache), f"changing the {what} must leave the original entry"
    (inc / "scale.h").write_text("#define SCALE 3.0f\n")
    assert _build(request(), cache), "editing an included header must rebuild"
    assert not _build(request(), cache)
    (inc / "scale.h").write_text("#define SCALE 2.0f\n")
    assert _build(request(), cache), "the entry holds the last build: restoring the header rebuilds"
    monkeypatch.setattr(nvrtc_cache, "nvrtc_identity", lambda: "/elsewhere/libnvrtc.so.13:1:2")
    assert _build(request(), cache), "another NVRTC release must rebuild"


def test_a_header_edit_changes_the_compiled_code(tmp_path: Path) -> None:
    import brainevent.nvrtc as nv

    (tmp_path / "inc").mkdir()
    header = tmp_path / "inc" / "value.h"
    source = '#include "value.h"\nextern "C" __global__ void fill(float* o) { o[threadIdx.x] = VALUE; }\n'
    header.write_text("#define VALUE 1.5f\n")
    first = nv.compile(
        source, "fill", "sm_90", include_dirs=[tmp_path / "inc"], build_directory=str(tmp_path)
    )
    header.write_text("#define VALUE 2.5f\n")
    second = nv.compile(
        source, "fill", "sm_90", include_dirs=[tmp_path / "inc"], build_directory=str(tmp_path)
    )
    assert first.code != second.code


def test_source_files_are_read_and_their_quoted_includes_found(tmp_path: Path) -> None:
    import brainevent.nvrtc as nv

    (tmp_path / "k.cuh").write_text("#define OFFSET 1\n")
    path = tmp_path / "k.cu"
    path.write_text(
        '#include "k.cuh"\nextern "C" __global__ void inc(int* o) { o[threadIdx.x] += OFFSET; }\n'
    )
    out = nv.compile(path, "inc", "sm_80", build_directory=str(tmp_path / "cache"))
    assert out.lowered == {"inc": "inc"}


BROKEN = """extern "C" __global__ void add(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = x[i] + undefined_name;
}
"""


def test_a_compile_error_quotes_the_users_line_of_an_inline_source(tmp_path: Path) -> None:
    import brainevent.nvrtc as nv

    with pytest.raises(CompileError) as caught:
        nv.compile(BROKEN, "add", "sm_80", build_directory=str(tmp_path))
    message = str(caught.value)
    assert "the inline source, line 4: error" in message
    assert "undefined_name" in message
    assert "> 4 |     out[i] = x[i] + undefined_name;" in message
    assert caught.value.first_error is not None and "line 4" in caught.value.first_error
    assert not list((tmp_path / "v1" / "nvrtc").glob("*/manifest.json")), "a failed compile publishes nothing"


def test_a_compile_error_in_a_file_names_the_file_and_line(tmp_path: Path) -> None:
    import brainevent.nvrtc as nv

    path = tmp_path / "broken.cu"
    path.write_text(BROKEN)
    with pytest.raises(CompileError, match=r"broken\.cu, line 4: error") as caught:
        nv.compile(path, "add", "sm_80", build_directory=str(tmp_path / "cache"))
    assert "> 4 |     out[i] = x[i] + undefined_name;" in str(caught.value)


def test_a_compile_error_in_a_header_names_the_header_line(tmp_path: Path) -> None:
    import brainevent.nvrtc as nv

    (tmp_path / "bad.h").write_text("// helpers\n__device__ float twice(float v) { return 2 * v + oops; }\n")
    source = '#include "bad.h"\nextern "C" __global__ void k(float* o) { o[0] = twice(o[0]); }\n'
    with pytest.raises(CompileError) as caught:
        nv.compile(source, "k", "sm_80", include_dirs=[tmp_path], build_directory=str(tmp_path / "c"))
    message = str(caught.value)
    assert f"{tmp_path / 'bad.h'}, line 2: error" in message
    assert "> 2 | __device__ float twice(float v) { return 2 * v + oops; }" in message


def test_bad_architecture_is_a_typed_error() -> None:
    import brainevent.nvrtc as nv
    from brainevent.errors import KernelCallError

    with pytest.raises(KernelCallError, match="compute capability 'sm_x' is not valid"):
        nv.compile(VECTOR_ADD, "add", "sm_x")


def test_doctor_says_which_libnvrtc_is_used_and_what_still_needs_nvcc() -> None:
    from brainevent.doctor import Report, _nvrtc_section

    report = Report()
    _nvrtc_section(report, compile_checks=True, gpu_present=False)
    text = "\n".join(report.lines)
    assert "libnvrtc.so" in text and "found_via" in text
    assert "smoke compile      ok (sm_80 cubin)" in text
    assert "no for cuda_kernel's kernels and the launcher" in text


def test_cache_list_names_the_kernels_of_an_entry(tmp_path: Path) -> None:
    import brainevent.nvrtc as nv

    nv.compile(VECTOR_ADD, "add", "sm_80", build_directory=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-m", "brainevent", "cache", "--cache-dir", str(tmp_path), "list"],
        env=dict(os.environ, PYTHONPATH=SRC),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "nvrtc/" in done.stdout and "[cuda, add]" in done.stdout


def test_an_edited_toolkit_header_rebuilds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Headers found in the runtime header directories are recorded like any other (a stat on
    each hit, not a read). They are not scanned before a build (CCCL's hundreds would cost every
    compile), so one written within the racy window is trusted only once older: no window here."""
    from brainevent.cache import deps
    from brainevent.nvrtc import toolkit

    monkeypatch.setattr(deps, "RACY_WINDOW_NS", 0)

    toolkit_dir = tmp_path / "toolkit"
    toolkit_dir.mkdir()
    header = toolkit_dir / "tk_value.h"
    header.write_text("#define TK_VALUE 1.0f\n")
    monkeypatch.setattr(toolkit, "runtime_include_dirs", lambda: (str(toolkit_dir),))
    source = '#include <tk_value.h>\nextern "C" __global__ void k(float* o) { o[0] = TK_VALUE; }\n'
    request = _request(source, ("k",), "sm_80")
    cache = tmp_path / "cache"
    assert _build(request, cache)
    assert not _build(request, cache)
    header.write_text("#define TK_VALUE 22.0f\n")
    assert _build(request, cache), "a changed toolkit header must rebuild"


def test_an_option_nvrtc_refuses_is_a_toolchain_error_with_its_log(tmp_path: Path) -> None:
    import brainevent.nvrtc as nv
    from brainevent.errors import ToolchainError

    with pytest.raises(
        ToolchainError, match=r"refused the compile of <inline> for sm_80: NVRTC_ERROR_INVALID_OPTION"
    ):
        nv.compile(VECTOR_ADD, "add", "sm_80", options=["--no-such-option"], build_directory=str(tmp_path))
