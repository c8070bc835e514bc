"""The cache serves a binary only while every file its compiler read is unchanged.

Each test builds through a real g++ (or nvcc) behind a wrapper that counts its runs, so a
hit is shown to run no compiler, and an edit to any header the compiler opened, however
it was reached, is shown to rebuild and change the result.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent.cache.deps import RACY_WINDOW_NS

SRC = str(Path(__file__).resolve().parents[2] / "src")

KERNEL = """
// @BE f arg ret
void f(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i] + VAL;
}
"""


@pytest.fixture
def counting_cxx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """BRAINEVENT_CXX is g++ behind a script that logs each compile it runs."""
    log = tmp_path / "compiler-runs.log"
    wrapper = tmp_path / "bin" / "counting-g++"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec g++ "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("BRAINEVENT_CXX", str(wrapper))
    monkeypatch.setenv("BRAINEVENT_CACHE_DIR", str(tmp_path / "cache"))
    return log


def compiles(log: Path) -> int:
    """Compiler runs that compiled a source file so far (with or without linking it in the
    same call; the -v probe of the compiler's own directories and plain links aside)."""
    if not log.exists():
        return 0
    return sum(1 for line in log.read_text().splitlines() if any(w.endswith(".cpp") for w in line.split()))


def write_old(path: Path, text: str) -> Path:
    """Writes a file as if it had been there a while (older than the racy window).

    The modification time can be set back, the change time cannot (a build trusts a file
    it did not foresee only when both are old): this waits until the change time is too."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    past = time.time() - 2 * RACY_WINDOW_NS / 1e9 - 5
    os.utime(path, (past, past))
    wait = (path.stat().st_ctime_ns + RACY_WINDOW_NS) / 1e9 + 0.05 - time.time()
    if wait > 0:
        time.sleep(wait)
    return path


def result(mod: brainevent.CompiledModule) -> float:
    return float(np.asarray(mod.f(jnp.zeros(2, jnp.float32)))[0])


def check_edit_cycle(load, header: Path, log: Path) -> None:
    """load -> hit without a compile -> edit header -> rebuild with the new value -> hit."""
    first = load()
    assert first.built_now and result(first) == 3.0
    runs = compiles(log)
    again = load()
    assert not again.built_now and compiles(log) == runs, "an untouched load must be a hit"
    header.write_text(header.read_text().replace("3", "7"))
    edited = load()
    assert edited.built_now, "editing a header the compiler read must rebuild"
    assert result(edited) == 7.0
    runs = compiles(log)
    last = load()
    assert not last.built_now and compiles(log) == runs
    assert result(last) == 7.0


def test_header_named_by_a_macro(tmp_path: Path, counting_cxx: Path) -> None:
    project = tmp_path / "proj"
    header = write_old(project / "sub" / "val.h", "#define VAL 3\n")
    source = write_old(
        project / "k.cpp",
        '#include "brainevent/common.h"\n#define HDR "sub/val.h"\n#include HDR\n' + KERNEL,
    )
    check_edit_cycle(lambda: brainevent.load_cpp_file(str(source), name="dep_macro"), header, counting_cxx)


def test_header_through_dash_i_in_extra_cflags(tmp_path: Path, counting_cxx: Path) -> None:
    header = write_old(tmp_path / "inc" / "val.h", "#define VAL 3\n")
    src = '#include "brainevent/common.h"\n#include <val.h>\n' + KERNEL
    check_edit_cycle(
        lambda: brainevent.load_cpp_inline(
            name="dep_dash_i", cpp_sources=src, extra_cflags=["-I" + str(tmp_path / "inc")]
        ),
        header,
        counting_cxx,
    )


def test_header_forced_with_dash_include(tmp_path: Path, counting_cxx: Path) -> None:
    header = write_old(tmp_path / "forced.h", "#define VAL 3\n")
    src = '#include "brainevent/common.h"\n' + KERNEL
    check_edit_cycle(
        lambda: brainevent.load_cpp_inline(
            name="dep_forced", cpp_sources=src, extra_cflags=["-include", str(header)]
        ),
        header,
        counting_cxx,
    )


def test_inline_source_with_absolute_include(tmp_path: Path, counting_cxx: Path) -> None:
    header = write_old(tmp_path / "abs" / "val.h", "#define VAL 3\n")
    src = f'#include "brainevent/common.h"\n#include "{header}"\n' + KERNEL
    check_edit_cycle(
        lambda: brainevent.load_cpp_inline(name="dep_abs", cpp_sources=src), header, counting_cxx
    )


def test_has_include(tmp_path: Path, counting_cxx: Path) -> None:
    header = write_old(tmp_path / "inc" / "val.h", "#define VAL 3\n")
    src = (
        '#include "brainevent/common.h"\n#if __has_include("val.h")\n#include "val.h"\n'
        "#else\n#define VAL 0\n#endif\n" + KERNEL
    )
    check_edit_cycle(
        lambda: brainevent.load_cpp_inline(
            name="dep_has_include", cpp_sources=src, extra_include_paths=[str(tmp_path / "inc")]
        ),
        header,
        counting_cxx,
    )


def test_parent_directory_include(tmp_path: Path, counting_cxx: Path) -> None:
    header = write_old(tmp_path / "proj" / "common" / "val.h", "#define VAL 3\n")
    source = write_old(
        tmp_path / "proj" / "kernels" / "k.cpp",
        '#include "brainevent/common.h"\n#include "../common/val.h"\n' + KERNEL,
    )
    check_edit_cycle(lambda: brainevent.load_cpp_file(str(source), name="dep_parent"), header, counting_cxx)


def test_symlinked_directory(tmp_path: Path, counting_cxx: Path) -> None:
    header = write_old(tmp_path / "real" / "val.h", "#define VAL 3\n")
    (tmp_path / "linked").symlink_to(tmp_path / "real", target_is_directory=True)
    src = '#include "brainevent/common.h"\n#include "val.h"\n' + KERNEL
    check_edit_cycle(
        lambda: brainevent.load_cpp_inline(
            name="dep_symlink", cpp_sources=src, extra_include_paths=[str(tmp_path / "linked")]
        ),
        header,
        counting_cxx,
    )


def test_extra_include_paths(tmp_path: Path, counting_cxx: Path) -> None:
    header = write_old(tmp_path / "inc" / "deeper.h", "#define VAL 3\n")
    write_old(tmp_path / "inc" / "val.h", '#include "deeper.h"\n')  # reached through another header
    src = '#include "brainevent/common.h"\n#include "val.h"\n' + KERNEL
    check_edit_cycle(
        lambda: brainevent.load_cpp_inline(
            name="dep_include_paths", cpp_sources=src, extra_include_paths=[str(tmp_path / "inc")]
        ),
        header,
        counting_cxx,
    )


def test_deleted_header_rebuilds_and_reports_the_compiler_error(tmp_path: Path, counting_cxx: Path) -> None:
    header = write_old(tmp_path / "inc" / "val.h", "#define VAL 3\n")
    src = '#include "brainevent/common.h"\n#include <val.h>\n' + KERNEL
    flags = ["-I" + str(tmp_path / "inc")]
    assert brainevent.load_cpp_inline(name="dep_deleted", cpp_sources=src, extra_cflags=flags).built_now
    header.unlink()
    with pytest.raises(brainevent.CompileError, match=r"val\.h"):
        brainevent.load_cpp_inline(name="dep_deleted", cpp_sources=src, extra_cflags=flags)


def test_same_size_edit_within_the_same_second_is_seen(tmp_path: Path, counting_cxx: Path) -> None:
    """An edit that keeps the size and restores the time: the stat matches, the hash does not."""
    header = write_old(tmp_path / "inc" / "val.h", "#define VAL 3\n")
    src = '#include "brainevent/common.h"\n#include <val.h>\n' + KERNEL
    flags = ["-I" + str(tmp_path / "inc")]
    assert (
        result(brainevent.load_cpp_inline(name="dep_same_size", cpp_sources=src, extra_cflags=flags)) == 3.0
    )
    before = header.stat()
    header.write_text("#define VAL 5\n")  # same length
    os.utime(header, ns=(before.st_atime_ns, before.st_mtime_ns))
    # The stat is the recorded one and old: trusted without hashing, as in make and ccache.
    mod = brainevent.load_cpp_inline(name="dep_same_size", cpp_sources=src, extra_cflags=flags)
    assert not mod.built_now
    # A recent mtime (inside the racy window) is never trusted on its stat alone.
    header.write_text("#define VAL 6\n")
    mod = brainevent.load_cpp_inline(name="dep_same_size", cpp_sources=src, extra_cflags=flags)
    assert mod.built_now and result(mod) == 6.0


def test_header_edited_while_the_build_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The entry records what was compiled, not what is on disk after the build."""
    header = write_old(tmp_path / "inc" / "val.h", "#define VAL 3\n")
    wrapper = tmp_path / "editing-g++"
    # Compiles, then edits the header as a user saving mid-build would.
    wrapper.write_text(
        f'#!/bin/sh\ng++ "$@" || exit $?\ncase "$*" in *src/k0_*) echo "#define VAL 8" > {header} ;; esac\n'
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv("BRAINEVENT_CXX", str(wrapper))
    monkeypatch.setenv("BRAINEVENT_CACHE_DIR", str(tmp_path / "cache"))
    src = '#include "brainevent/common.h"\n#include <val.h>\n' + KERNEL
    flags = ["-I" + str(tmp_path / "inc")]
    first = brainevent.load_cpp_inline(name="dep_mid_build", cpp_sources=src, extra_cflags=flags)
    assert first.built_now and result(first) == 3.0  # compiled before the edit
    assert header.read_text().strip() == "#define VAL 8"
    monkeypatch.setenv("BRAINEVENT_CXX", "g++")
    second = brainevent.load_cpp_inline(name="dep_mid_build", cpp_sources=src, extra_cflags=flags)
    assert second.built_now, "the header changed after it was read: the entry must not be served"
    assert result(second) == 8.0


def test_fresh_process_hit_runs_no_compiler_and_sees_edits(tmp_path: Path, counting_cxx: Path) -> None:
    header = write_old(tmp_path / "inc" / "val.h", "#define VAL 3\n")
    script = textwrap.dedent(
        f"""
        import sys, brainevent, numpy as np, jax.numpy as jnp
        src = '#include "brainevent/common.h"\\n#define HDR <val.h>\\n#include HDR\\n' + {KERNEL!r}
        flags = ["-I{tmp_path / "inc"}"]
        mod = brainevent.load_cpp_inline(name="dep_fresh", cpp_sources=src, extra_cflags=flags)
        print(int(mod.built_now), float(np.asarray(mod.f(jnp.zeros(1, jnp.float32)))[0]))
        """
    )
    env = dict(os.environ, PYTHONPATH=SRC, JAX_PLATFORMS="cpu")

    def run() -> tuple[str, int]:
        out = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        return out.stdout.split()[-2] + " " + out.stdout.split()[-1], compiles(counting_cxx)

    assert run() == ("1 3.0", 2)  # the kernel unit and the shared decoder (first build here)
    assert run() == ("0 3.0", 2)
    header.write_text("#define VAL 4\n")
    assert run() == ("1 4.0", 3)  # only the kernel unit: the decoder object is reused
    assert run() == ("0 4.0", 3)


@pytest.mark.nvcc
def test_cuda_shared_cuh_rebuilds_exactly_its_readers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAINEVENT_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "kernels"
    shared = write_old(src / "shared.cuh", "#pragma once\n#define SCALE 2.0f\n")
    body = (
        '#include <cuda_runtime.h>\n#include "brainevent/common.h"\n{inc}'
        "__global__ void k_{n}(float* o) {{ o[threadIdx.x] = {value}; }}\n"
        "// @BE fill_{n} ret stream\nvoid fill_{n}(BE::Tensor out, int64_t stream) {{\n"
        "  k_{n}<<<1, 32, 0, (cudaStream_t)stream>>>(out.data_ptr<float>());\n}}\n"
    )
    write_old(src / "a.cu", body.format(inc='#include "shared.cuh"\n', n="a", value="SCALE"))
    write_old(src / "b.cu", body.format(inc="", n="b", value="1.0f"))

    def load() -> brainevent.CompiledModule:
        return brainevent.load_cuda_dir(src, compute_capability="sm_80", auto_register=False)

    first = load()
    assert first.built_now
    assert not load().built_now
    shared.write_text("#pragma once\n#define SCALE 3.0f\n")
    import logging

    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("brainevent").addHandler(handler)
    logging.getLogger("brainevent").setLevel(logging.INFO)
    try:
        edited = load()
    finally:
        logging.getLogger("brainevent").removeHandler(handler)
    assert edited.built_now and edited.path != first.path
    assert any("1 object(s) reused" in r for r in records), records  # b.cu
    assert not any("shared FFI decoder" in r for r in records), records  # built by the first load
    assert not load().built_now
