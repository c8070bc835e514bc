"""Existing C and C++ code through the host compilers: C compiled as C, directories of mixed
C and C++ files, OpenMP, link failures reported in the user's terms, live build output."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent.errors import CompileError, SpecError

pytestmark = pytest.mark.usefixtures("gxx")

# C that is not C++: `restrict`, malloc's void* assigned without a cast, a designated initialiser.
C_SCALE = r"""
#include <stdlib.h>
#include <string.h>
struct params { float k; long version; };
static const struct params P = { .k = 3.0f, .version = __STDC_VERSION__ };
long c_version(void) { return P.version; }
void scale_c(const float* restrict in, float* restrict out, long n) {
    float* tmp = malloc(n * sizeof(float));
    for (long i = 0; i < n; ++i) tmp[i] = in[i] * P.k;
    memcpy(out, tmp, n * sizeof(float));
    free(tmp);
}
"""

CPP_ENTRY = r"""
#include "brainevent/common.h"
extern "C" void scale_c(const float* in, float* out, long n);
extern "C" long c_version(void);
// @BE scale arg ret
void scale(const BE::Tensor x, BE::Tensor out) {
    scale_c(static_cast<const float*>(x.data_ptr()), static_cast<float*>(out.data_ptr()), x.numel());
}
// @BE versions ret
void versions(BE::Tensor out) {
    auto* o = static_cast<int64_t*>(out.data_ptr());
    o[0] = c_version();
    o[1] = __cplusplus;
}
"""


def _write(directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(textwrap.dedent(text))
    return directory


def _versions(mod: brainevent.CompiledModule) -> list[int]:
    out = mod.versions(outs=[jax.ShapeDtypeStruct((2,), jnp.int64)])
    return [int(v) for v in np.asarray(out[0] if isinstance(out, (list, tuple)) else out)]


@pytest.fixture(scope="module")
def c_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write(tmp_path_factory.mktemp("cdir"), {"scale.c": C_SCALE, "entry.cpp": CPP_ENTRY})


def test_a_c_file_is_compiled_as_c_in_a_cpp_dir(c_dir: Path) -> None:
    jax.config.update("jax_enable_x64", True)
    try:
        mod = brainevent.load_cpp_dir(c_dir, name="c_as_c")
        x = np.linspace(-1, 1, 37, dtype=np.float32)
        np.testing.assert_allclose(np.asarray(jax.jit(mod.scale)(jnp.asarray(x))), 3.0 * x, rtol=1e-6)
        assert _versions(mod) == [201710, 201703]  # gnu17 for C, C++17 for C++
    finally:
        jax.config.update("jax_enable_x64", False)


def test_each_standard_goes_to_its_language(c_dir: Path) -> None:
    jax.config.update("jax_enable_x64", True)
    try:
        mod = brainevent.load_cpp_file(
            [c_dir / "entry.cpp", c_dir / "scale.c"], name="c_std", extra_cflags=["-std=c11", "-std=c++20"]
        )
        assert _versions(mod) == [201112, 202002]
    finally:
        jax.config.update("jax_enable_x64", False)


def test_a_c_file_alone_is_refused(c_dir: Path) -> None:
    with pytest.raises(SpecError, match=r"scale\.c is C, and entry points take BE::Tensor"):
        brainevent.load_cpp_file(c_dir / "scale.c")


def test_an_entry_point_in_a_c_file_is_refused(tmp_path: Path) -> None:
    d = _write(
        tmp_path,
        {
            "k.c": "// @BE cfun arg ret\nvoid cfun(const float* in, float* out) { out[0] = in[0]; }\n",
            "e.cpp": CPP_ENTRY.replace("scale_c(", "(void)("),
        },
    )
    with pytest.raises(SpecError, match=r"'cfun' is an entry point but .*k\.c is compiled as C"):
        brainevent.load_cpp_dir(d, name="c_entry")


def test_load_cpp_dir_rejects_a_folder_without_sources(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("no code")
    with pytest.raises(SpecError, match=r"load_cpp_dir: .* holds no \.cpp/\.cc/\.cxx/\.c files"):
        brainevent.load_cpp_dir(tmp_path)


def test_load_cpp_dir_recompiles_only_the_edited_file(tmp_path: Path, fresh_cache: Path) -> None:
    d = _write(tmp_path / "src", {"scale.c": C_SCALE, "entry.cpp": CPP_ENTRY})
    brainevent.load_cpp_dir(d, name="per_object")
    (d / "scale.c").write_text(C_SCALE.replace("3.0f", "5.0f"))
    objects = fresh_cache / "v1" / "per_object" / "objects"
    before = {p.name for p in objects.rglob("*.o")}
    mod = brainevent.load_cpp_dir(d, name="per_object")
    new = {p.name for p in objects.rglob("*.o")} - before
    assert len(new) == 1  # scale.c's object; entry.cpp's and the binding's were reused
    x = jnp.arange(4, dtype=jnp.float32)
    np.testing.assert_allclose(np.asarray(mod.scale(x)), 5.0 * np.arange(4))


# ------------------------------------------------------------------------------ OpenMP

OPENMP_SUM = r"""
#include "brainevent/common.h"
#include <omp.h>
// @BE row_sums arg ret
void row_sums(const BE::Tensor x, BE::Tensor out) {
    const float* in = static_cast<const float*>(x.data_ptr());
    float* o = static_cast<float*>(out.data_ptr());
    const int64_t rows = x.size(0), cols = x.size(1);
    #pragma omp parallel for
    for (int64_t r = 0; r < rows; ++r) {
        float s = 0;
        for (int64_t c = 0; c < cols; ++c) s += in[r * cols + c];
        o[r] = s;
    }
}
// @BE threads ret
void threads(BE::Tensor out) { static_cast<int32_t*>(out.data_ptr())[0] = omp_get_max_threads(); }
"""


def test_openmp_option_compiles_links_and_runs() -> None:
    mod = brainevent.load_cpp_inline("omp_sum", OPENMP_SUM, openmp=True)
    x = np.random.default_rng(0).standard_normal((64, 33)).astype(np.float32)
    got = jax.jit(lambda a: mod.row_sums(a, outs=[jax.ShapeDtypeStruct((64,), jnp.float32)]))(x)
    np.testing.assert_allclose(np.asarray(got[0]), x.sum(axis=1), rtol=1e-5, atol=1e-5)
    threads = mod.threads(outs=[jax.ShapeDtypeStruct((1,), jnp.int32)])
    assert int(np.asarray(threads[0])[0]) >= 1
    # -fopenmp in the flags is the same module: the same cache entry, nothing rebuilt.
    again = brainevent.load_cpp_inline("omp_sum", OPENMP_SUM, extra_cflags=["-fopenmp"])
    assert again.cache_dir == mod.cache_dir and not again.built_now


def test_omp_pragmas_without_openmp_are_named_once(caplog: pytest.LogCaptureFixture) -> None:
    source = OPENMP_SUM.split("// @BE threads")[0].replace("#include <omp.h>", "")
    with caplog.at_level(logging.WARNING, logger="brainevent"):
        mod = brainevent.load_cpp_inline("omp_serial", source, force_rebuild=True)
        brainevent.load_cpp_inline("omp_serial", source)  # a cache hit: said already
    said = [r.getMessage() for r in caplog.records if "pragma omp" in r.getMessage()]
    assert len(said) == 1 and "openmp=True" in said[0] and "serially" in said[0], said
    x = np.ones((4, 3), np.float32)  # and it still runs, serially
    got = mod.row_sums(x, outs=[jax.ShapeDtypeStruct((4,), jnp.float32)])
    np.testing.assert_allclose(np.asarray(got[0]), 3.0)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="brainevent"):
        brainevent.load_cpp_inline("omp_sum", OPENMP_SUM, openmp=True, force_rebuild=True)
    assert not [r for r in caplog.records if "pragma omp" in r.getMessage()]


def test_without_openmp_the_runtime_call_is_a_build_error_naming_it() -> None:
    with pytest.raises(CompileError, match=r"^compiling module 'no_omp' failed: undefined symbol 'omp_get_"):
        brainevent.load_cpp_inline(
            "no_omp", OPENMP_SUM.replace("#include <omp.h>", 'extern "C" int omp_get_max_threads();')
        )


_POLICY_PROBE = textwrap.dedent(
    """
    import os, sys, brainevent
    from brainevent.runtime.openmp import openmp_runtime_loaded
    src = open(sys.argv[1]).read()
    before = openmp_runtime_loaded()
    brainevent.load_cpp_inline("omp_sum", src, openmp=True)
    print(before, openmp_runtime_loaded(), os.environ.get("OMP_WAIT_POLICY"))
    """
)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "False True PASSIVE"),
        ({"OMP_WAIT_POLICY": "active"}, "False True active"),
        ({"BRAINEVENT_OPENMP_PASSIVE": "0"}, "False True None"),
    ],
)
def test_the_wait_policy_is_set_before_the_runtime_loads(
    tmp_path: Path, env: dict[str, str], expected: str
) -> None:
    brainevent.load_cpp_inline("omp_sum", OPENMP_SUM, openmp=True)  # built here, a hit below
    source = tmp_path / "omp.cpp"
    source.write_text(OPENMP_SUM)
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    done = subprocess.run(
        [sys.executable, "-c", _POLICY_PROBE, str(source)],
        env={**clean, "JAX_PLATFORMS": "cpu", **env},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == expected


# ------------------------------------------------------------------------------ link errors

DUP_HEADER = """
#pragma once
#include <cstddef>
enum DType { F32, F64 };
size_t sizeof_dtype(DType t) { return t == F32 ? 4 : 8; }
"""


def test_a_duplicate_definition_is_the_first_line(tmp_path: Path) -> None:
    d = _write(
        tmp_path,
        {
            "common.h": DUP_HEADER,
            "a.cpp": '#include "brainevent/common.h"\n#include "common.h"\n'
            "// @BE fa ret\nvoid fa(BE::Tensor out) { (void)sizeof_dtype(F32); }\n",
            "b.cpp": '#include "common.h"\nsize_t twice(DType t) { return 2 * sizeof_dtype(t); }\n',
        },
    )
    with pytest.raises(CompileError) as info:
        brainevent.load_cpp_dir(d, name="dup_def")
    first = str(info.value).splitlines()[0]
    assert first == (
        f"compiling module 'dup_def' failed: multiple definition of 'sizeof_dtype(DType)': defined in "
        f"{d / 'b.cpp'} and {d / 'a.cpp'}. A function defined in a header included by several files "
        "needs `inline` (or `static`)."
    )
    assert info.value.first_error is not None and "collect2" not in info.value.first_error


def test_an_undefined_symbol_fails_the_build_naming_symbol_and_file(tmp_path: Path) -> None:
    d = _write(
        tmp_path,
        {
            "uses.cpp": '#include "brainevent/common.h"\nextern float missing_scale;\n'
            "// @BE fu arg ret\nvoid fu(const BE::Tensor x, BE::Tensor out) {\n"
            "  static_cast<float*>(out.data_ptr())[0] = missing_scale; }\n",
        },
    )
    with pytest.raises(
        CompileError, match=r"undefined symbol 'missing_scale', used in .*uses\.cpp \(in fu\("
    ):
        brainevent.load_cpp_dir(d, name="undef_sym")


def test_a_missing_library_is_named() -> None:
    with pytest.raises(CompileError, match=r"failed: the linker cannot find library libbe_no_such_lib "):
        brainevent.load_cpp_inline(
            "no_lib",
            CPP_ENTRY.split("extern")[0] + "// @BE f ret\nvoid f(BE::Tensor o) {}\n",
            extra_ldflags=["-lbe_no_such_lib"],
        )


def test_the_standard_libraries_still_resolve() -> None:
    source = r"""
    #include "brainevent/common.h"
    #include <cmath>
    #include <string>
    #include <vector>
    // @BE f arg ret
    void f(const BE::Tensor x, BE::Tensor out) {
        std::vector<float> v(static_cast<const float*>(x.data_ptr()),
                             static_cast<const float*>(x.data_ptr()) + x.numel());
        float* o = static_cast<float*>(out.data_ptr());
        for (size_t i = 0; i < v.size(); ++i) o[i] = std::erf(v[i]) + std::to_string(i).size() - 1;
    }
    """
    mod = brainevent.load_cpp_inline("zdefs_stdlib", source)
    x = np.linspace(-2, 2, 9, dtype=np.float32)
    from math import erf

    np.testing.assert_allclose(np.asarray(mod.f(jnp.asarray(x))), [erf(v) for v in x], rtol=1e-6)


# ------------------------------------------------------------------------------ live output


class _Times(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[tuple[float, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((time.monotonic(), record.getMessage()))


@pytest.fixture
def slow_link_cxx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gxx: str) -> None:
    """A compiler that takes 3 s to link: the lines of the compile steps must arrive before."""
    wrapper = tmp_path / "slow-link-cxx"
    wrapper.write_text(f'#!/bin/sh\ncase " $* " in *" -shared "*) sleep 3;; esac\nexec {gxx} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("BRAINEVENT_CXX", str(wrapper))


def _capture(name: str) -> _Times:
    handler = _Times()
    logger = logging.getLogger(name)
    logger.addHandler(handler)
    return handler


@pytest.mark.usefixtures("slow_link_cxx", "fresh_cache")
def test_verbose_build_lines_are_streamed() -> None:
    handler = _capture("brainevent.build")
    try:
        brainevent.load_cpp_inline(
            "streamed", CPP_ENTRY.split("extern")[0] + "// @BE f ret\nvoid f(BE::Tensor o) {}\n", verbose=True
        )
    finally:
        logging.getLogger("brainevent.build").removeHandler(handler)
    ended = time.monotonic()
    compiled = [t for t, m in handler.records if m.endswith("-o k0.o")]  # the kernel unit's command
    assert compiled, handler.records
    assert ended - compiled[0] > 2.5  # logged while the (slow) link was still running


@pytest.mark.usefixtures("slow_link_cxx", "fresh_cache")
def test_long_builds_say_they_are_still_compiling(monkeypatch: pytest.MonkeyPatch) -> None:
    from brainevent.build import runner

    monkeypatch.setattr(runner, "PROGRESS_INTERVAL_S", 1.0)
    handler = _capture("brainevent")
    logging.getLogger("brainevent").setLevel(logging.INFO)
    try:
        brainevent.load_cpp_inline(
            "still", CPP_ENTRY.split("extern")[0] + "// @BE f ret\nvoid f(BE::Tensor o) {}\n"
        )
    finally:
        logging.getLogger("brainevent").removeHandler(handler)
        logging.getLogger("brainevent").setLevel(logging.NOTSET)
    messages = [m for _, m in handler.records]
    assert messages[0].startswith("compiling still: 1 translation unit(s) [still.cpp]")
    assert any(m.startswith("still compiling still (") for m in messages), messages
