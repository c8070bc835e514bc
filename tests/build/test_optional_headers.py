"""<complex> and the checking half of common.h only where a unit uses them
(-DBE_STD_COMPLEX=0, -DBE_CHECK_HEADERS=0 otherwise), with real g++ / nvcc.

The half headers' twin of this lives in tests/compat/test_compat_headers_cuda.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent.build.optional_headers import (
    CHECKS_MACRO,
    COMPLEX_MACRO,
    names_std_complex,
    needs_headers,
    optional_header_flags,
)
from tests.support.kernels import CUDA_VECTOR_ADD

NO_COMPLEX = "-DBE_STD_COMPLEX=0"
NO_CHECKS = "-DBE_CHECK_HEADERS=0"

REAL_SCALE = r"""
#include "brainevent/common.h"

// @BE scale arg ret attr.factor:float32
void scale(const BE::Tensor x, BE::Tensor out, float factor) {
    const float* px = x.data_ptr<float>();
    float* po = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) po[i] = px[i] * factor;
}
"""

# The kernel names no complex type itself: its project header does.
CONJ_VIA_HEADER = r"""
#include "brainevent/common.h"
#include "conj_impl.h"

// @BE conj arg ret
void conj(const BE::Tensor x, BE::Tensor out) {
    conj_all(x, out);
}
"""

CONJ_IMPL = r"""
#pragma once
inline void conj_all(const BE::Tensor& x, BE::Tensor& out) {
    const auto* px = x.data_ptr<BE::complex64>();
    auto* po = out.data_ptr<BE::complex64>();
    for (int64_t i = 0; i < x.numel(); ++i) po[i] = std::conj(px[i]);
}
"""

DISPATCH_FN = r"""
#include "brainevent/common.h"

// @BE total arg ret
void total(const BE::Tensor x, BE::Tensor out) {
    out.data_ptr<float>()[0] = BE_DISPATCH_FLOATING_AND_COMPLEX_FN(x.dtype(), "total", [&] {
        scalar_t s{};
        const scalar_t* p = x.data_ptr<scalar_t>();
        for (int64_t i = 0; i < x.numel(); ++i) s += p[i];
        return static_cast<float>(std::abs(s));
    });
}
"""


def _log(mod: brainevent.CompiledModule) -> str:
    return (mod.cache_dir / "build.log").read_text()  # with verbose=True: every command


@pytest.mark.parametrize(
    ("word", "needs"),
    [
        ("complex", True),
        ("complex64", True),
        ("complex128", True),
        ("complex64_t", True),  # a false positive: it only costs compile time
        ("BE_DISPATCH_COMPLEX_FN", True),
        ("BE_DISPATCH_FLOATING_AND_COMPLEX_FN", True),
        ("complex_literals", True),
        ("float", False),
        ("BE_DISPATCH_FLOATING_FN", False),
        ("real", False),
    ],
)
def test_complex_word_detection(word: str, needs: bool) -> None:
    assert names_std_complex(word) is needs


def test_complex_detection_reads_code_and_directives_not_comments() -> None:
    assert not needs_headers(COMPLEX_MACRO, ["// a complex kernel\n/* std::complex */ void f(float x);\n"])
    assert needs_headers(COMPLEX_MACRO, ["void f(std::complex<float> x);"])
    assert needs_headers(COMPLEX_MACRO, ["#define MY_DISPATCH BE_DISPATCH_COMPLEX_FN\nvoid f(float x);"])
    # <complex>'s functions whose names do not say so count when called as std::name
    assert needs_headers(COMPLEX_MACRO, ["auto g(const T& z) { return std::conj(z); }"])
    assert needs_headers(COMPLEX_MACRO, ["auto g(const T& z) { return std::norm(z); }"])
    assert not needs_headers(COMPLEX_MACRO, ["float norm(float x); float g(float x) { return norm(x); }"])
    assert needs_headers(COMPLEX_MACRO, ["#define BE_STD_COMPLEX 1\nvoid f(float x);"])  # theirs to decide


def test_complex_detection_follows_project_headers(tmp_path: Path) -> None:
    (tmp_path / "conj_impl.h").write_text(CONJ_IMPL)
    assert optional_header_flags(CONJ_VIA_HEADER, tmp_path, [], [], cuda=False) == []
    assert optional_header_flags(REAL_SCALE, tmp_path, [], [], cuda=False) == [NO_COMPLEX, NO_CHECKS]
    theirs = ["-DBE_STD_COMPLEX=1"]
    assert optional_header_flags(REAL_SCALE, None, [], theirs, cuda=False) == [NO_CHECKS]


def test_a_real_kernel_compiles_without_complex_and_matches_numpy() -> None:
    mod = brainevent.load_cpp_inline(name="opt_hdr_real", cpp_sources=REAL_SCALE, verbose=True)
    assert NO_COMPLEX in _log(mod)
    x = np.linspace(-2, 2, 13, dtype=np.float32)
    out = mod.scale(jnp.asarray(x), factor=1.5)
    np.testing.assert_allclose(np.asarray(out), x * 1.5, rtol=1e-6)


def test_complex_named_only_in_a_project_header_keeps_complex(tmp_path: Path) -> None:
    (tmp_path / "conj_impl.h").write_text(CONJ_IMPL)
    source = tmp_path / "conj.cpp"
    source.write_text(CONJ_VIA_HEADER)
    mod = brainevent.load_cpp_file(str(source), name="opt_hdr_conj", verbose=True)
    assert "BE_STD_COMPLEX" not in _log(mod)
    x = (np.arange(6) + 1j * np.arange(6, 0, -1)).astype(np.complex64)
    out = jax.jit(mod.conj)(jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(out), np.conj(x))


def test_complex_dispatch_keeps_complex_and_matches_numpy() -> None:
    mod = brainevent.load_cpp_inline(
        name="opt_hdr_dispatch",
        cpp_sources=DISPATCH_FN,
        functions={"total": ["arg", "ret"]},
        verbose=True,
    )
    assert "BE_STD_COMPLEX" not in _log(mod)
    x = (np.arange(4) - 1j).astype(np.complex64)
    out = mod.total(jnp.asarray(x), outs=jax.ShapeDtypeStruct((1,), np.float32))
    np.testing.assert_allclose(np.asarray(out)[0], abs(x.sum()), rtol=1e-6)


def test_complex_dispatch_without_complex_says_how_to_fix() -> None:
    source = "#define BE_STD_COMPLEX 0\n" + DISPATCH_FN
    with pytest.raises(
        brainevent.CompileError,
        match=r"BE_DISPATCH_FLOATING_AND_COMPLEX_FN needs <complex>: "
        r"compile with -DBE_STD_COMPLEX=1",
    ):
        brainevent.load_cpp_inline(name="opt_hdr_off", cpp_sources=source, auto_register=False)


@pytest.mark.nvcc
def test_the_seeds_vector_add_compiles_without_the_optional_headers() -> None:
    mod = brainevent.load_cuda_inline(
        name="opt_hdr_vadd",
        cuda_sources=CUDA_VECTOR_ADD,
        compute_capability="sm_80",
        auto_register=False,
        verbose=True,
    )
    log = _log(mod)
    assert NO_COMPLEX in log and NO_CHECKS in log and "-DBE_CUDA_HALF_TYPES=0" in log


# ---- the checking half of common.h (check.h, dispatch.h, scratch.h, <string>) -------------

# Names only dtype.h, half.h and tensor.h: built with -DBE_CHECK_HEADERS=0. The typed
# accessor throws on a wrong dtype: the error path is the shared decoder's.
PLAIN_TYPED = r"""
#include "brainevent/common.h"

// @BE add_i32 arg arg ret
void add_i32(const BE::Tensor a, const BE::Tensor b, BE::Tensor out) {
    const float* pa = a.data_ptr<float>();
    const int32_t* pb = b.data_ptr<int32_t>();
    float* po = out.data_ptr<float>();
    for (int64_t i = 0; i < a.numel(); ++i) po[i] = pa[i] + static_cast<float>(pb[i]);
}
"""

# The same kernel with a BE_CHECK, so it keeps the whole header.
CHECKED_TYPED = PLAIN_TYPED.replace("add_i32", "add_i32_checked").replace(
    "    float* po", '    BE_CHECK(a.numel() == b.numel()) << "sizes differ";\n    float* po'
)

# C library calls that <string> used to bring in; no std, no BE_ macro.
C_STYLE = r"""
#include "brainevent/common.h"

// @BE copy_len arg ret
void copy_len(const BE::Tensor x, BE::Tensor out) {
    memcpy(out.data_ptr(), x.data_ptr(), x.nbytes());
    if (strlen("abc") != 3 || !isdigit('7')) throw 42;
}
"""


@pytest.mark.parametrize(
    ("code", "needs"),
    [
        ("void f(const BE::Tensor& t) { t.data_ptr<float>(); }", False),
        ("void f(BE::float16_t* p, BE::DType d, BE::complex64_t c);", False),
        ("void f(const BE::Tensor& t) { BE_CHECK(t.ndim() == 1); }", True),
        ("#define MY_CHECK(c) BE_CHECK(c)\nvoid f();", True),
        ("void f() { std::vector<int> v; }", True),
        ("using namespace std; void f();", True),
        ("using namespace BE; void f(Tensor t);", True),
        ("namespace BE { void mine(); }", True),
        ("void f(BE::Scratch s);", True),
        ("void f(BE::complex64 z);", True),
        ('void f() { throw BE::Error("x", __FILE__, __LINE__); }', True),
        ("// BE_CHECK and std::string only in a comment\nvoid f(BE::Tensor t);", False),
    ],
)
def test_check_headers_detection(code: str, needs: bool) -> None:
    flags = optional_header_flags(code, None, [], [], cuda=False)
    assert (NO_CHECKS not in flags) is needs


def test_a_plain_kernel_without_the_checking_half_matches_numpy_and_reports_a_wrong_dtype() -> None:
    plain = brainevent.load_cpp_inline(name="opt_hdr_plain", cpp_sources=PLAIN_TYPED, verbose=True)
    checked = brainevent.load_cpp_inline(name="opt_hdr_checked", cpp_sources=CHECKED_TYPED, verbose=True)
    assert NO_CHECKS in _log(plain) and CHECKS_MACRO not in _log(checked)
    a = np.linspace(0, 1, 9, dtype=np.float32)
    b = np.arange(9, dtype=np.int32)
    np.testing.assert_allclose(np.asarray(plain.add_i32(jnp.asarray(a), jnp.asarray(b))), a + b)
    # A wrong dtype: the same typed message from both (raised through the decoder's instance
    # in the first), not reported as an unknown C++ exception.
    for fn in (plain.add_i32, checked.add_i32_checked):
        with pytest.raises(
            Exception, match=r"BE::Tensor: data_ptr<int32>\(\) on a tensor of dtype float32"
        ) as info:
            jax.block_until_ready(fn(jnp.asarray(a), jnp.asarray(a)))
        assert "uncaught C++ exception" not in str(info.value)


def test_c_library_calls_still_compile_without_the_checking_half() -> None:
    mod = brainevent.load_cpp_inline(name="opt_hdr_c_style", cpp_sources=C_STYLE, verbose=True)
    assert NO_CHECKS in _log(mod)
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(mod.copy_len(jnp.asarray(x))), x)


def test_plain_and_checked_units_share_one_module(tmp_path: Path) -> None:
    (tmp_path / "plain.cpp").write_text(PLAIN_TYPED)
    (tmp_path / "checked.cpp").write_text(CHECKED_TYPED)
    mod = brainevent.load_cpp_dir(str(tmp_path), name="opt_hdr_mixed", verbose=True)
    log = _log(mod)
    assert log.count(NO_CHECKS) == 1  # the plain unit only
    a = np.ones(4, np.float32)
    b = np.arange(4, dtype=np.int32)
    for fn in (mod.add_i32, mod.add_i32_checked):
        np.testing.assert_allclose(np.asarray(fn(jnp.asarray(a), jnp.asarray(b))), a + b)
        with pytest.raises(Exception, match=r"data_ptr<int32>\(\) on a tensor of dtype float32"):
            jax.block_until_ready(fn(jnp.asarray(a), jnp.asarray(a)))


def test_a_users_own_setting_of_the_checks_macro_wins() -> None:
    mod = brainevent.load_cpp_inline(
        name="opt_hdr_force_checks",
        cpp_sources=PLAIN_TYPED,
        extra_cflags=["-DBE_CHECK_HEADERS=1"],
        verbose=True,
    )
    log = _log(mod)
    assert "-DBE_CHECK_HEADERS=1" in log and NO_CHECKS not in log


# ---- every header of ours includes what it uses ----------------------------------------------

_HEADERS = sorted(p.name for p in (Path(brainevent.include_dir()) / "brainevent").glob("*.h"))
# Headers that need CUDA's own headers (cuda_runtime.h, cuda.h) to parse.
_NEEDS_CUDA = {"cuda_check.h"}  # the launchers reach the driver through dlopen: no CUDA headers


def _syntax_check(header: str, macros: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    from brainevent.headers import xla_include_dir

    command = ["g++", "-std=c++17", "-fsyntax-only", "-I", brainevent.include_dir()]
    command += ["-isystem", str(xla_include_dir()), *macros]
    if header in _NEEDS_CUDA:
        from brainevent.toolchain.nvcc import find_nvcc

        command += ["-isystem", str(Path(find_nvcc().root) / "include")]
    source = tmp_path / "only.cpp"
    source.write_text(f'#include "brainevent/{header}"\n')
    return subprocess.run([*command, str(source)], capture_output=True, text=True)


@pytest.mark.host
@pytest.mark.parametrize("header", [h for h in _HEADERS if h not in _NEEDS_CUDA])
@pytest.mark.parametrize("checks", ["1", "0"])
def test_each_header_compiles_on_its_own_in_both_modes(header: str, checks: str, tmp_path: Path) -> None:
    done = _syntax_check(header, [f"-DBE_CHECK_HEADERS={checks}", "-DBE_STD_COMPLEX=0"], tmp_path)
    if header == "ffi_binding.h" and checks == "0":  # the decoder must hold the error paths
        assert done.returncode != 0 and "compile it with BE_CHECK_HEADERS=1" in done.stderr
        return
    assert done.returncode == 0, done.stderr


@pytest.mark.nvcc
@pytest.mark.parametrize("header", sorted(_NEEDS_CUDA))
@pytest.mark.parametrize("checks", ["1", "0"])
def test_each_cuda_header_compiles_on_its_own_in_both_modes(header: str, checks: str, tmp_path: Path) -> None:
    done = _syntax_check(header, [f"-DBE_CHECK_HEADERS={checks}", "-DBE_STD_COMPLEX=0"], tmp_path)
    assert done.returncode == 0, done.stderr


# ---- headers from elsewhere -------------------------------------------------------------------

USES_OWN_HEADER = r"""
#include "brainevent/common.h"
#include "checked_helpers.h"

// @BE twice arg ret
void twice(const BE::Tensor x, BE::Tensor out) {
    twice_all(x, out);
}
"""

CHECKED_HELPERS = r"""
#pragma once
inline void twice_all(const BE::Tensor& x, BE::Tensor& out) {
    BE_CHECK(x.numel() == out.numel()) << "sizes differ";
    const float* px = x.data_ptr<float>();
    float* po = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) po[i] = 2.0f * px[i];
}
"""


def test_headers_on_an_include_flag_are_read_too(tmp_path: Path) -> None:
    (tmp_path / "checked_helpers.h").write_text(CHECKED_HELPERS)
    mod = brainevent.load_cpp_inline(
        name="opt_hdr_flag_dir", cpp_sources=USES_OWN_HEADER, extra_cflags=[f"-I{tmp_path}"], verbose=True
    )
    assert CHECKS_MACRO not in _log(mod)
    x = np.arange(6, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(mod.twice(jnp.asarray(x))), 2 * x)


def test_a_header_the_build_cannot_see_gets_a_note_that_says_how_to_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "checked_helpers.h").write_text(CHECKED_HELPERS)
    monkeypatch.setenv("CPATH", str(tmp_path))  # g++ finds it; the build's scan does not
    with pytest.raises(brainevent.CompileError, match="BE_CHECK") as info:
        brainevent.load_cpp_inline(name="opt_hdr_hidden", cpp_sources=USES_OWN_HEADER, auto_register=False)
    message = str(info.value)
    assert "Note: brainevent left out the checking half of brainevent/common.h" in message
    assert "pass its directory in extra_include_paths" in message and '"-DBE_CHECK_HEADERS=1"' in message
    # Either fix works.
    for name, options in (
        ("opt_hdr_hidden_paths", {"extra_include_paths": [str(tmp_path)]}),
        ("opt_hdr_hidden_flag", {"extra_cflags": ["-DBE_CHECK_HEADERS=1"]}),
    ):
        mod = brainevent.load_cpp_inline(name=name, cpp_sources=USES_OWN_HEADER, **options)  # type: ignore[arg-type]
        x = np.ones(3, dtype=np.float32)
        np.testing.assert_array_equal(np.asarray(mod.twice(jnp.asarray(x))), 2 * x)


@pytest.mark.parametrize(
    ("flags", "dirs"),
    [
        (["-I/a", "-I", "/b", "-isystem", "/c", "-isystem/d"], ["/a", "/b", "/c", "/d"]),
        (
            ["--include-path=/a", "--include-path", "/b", "-iquote", "/c", "-idirafter/d"],
            ["/a", "/b", "/c", "/d"],
        ),
        (["-Xcompiler=-I/a,-O2", "--compiler-options=-isystem,/b"], ["/a", "/b"]),
        (["-Xcompiler", "-I/a,-fopenmp", "--compiler-options", "-I/b"], ["/a", "/b"]),
        (["-O3", "-include", "pre.h", "-DX=1", "-Xcompiler", "-fPIC", "-lm"], []),
    ],
)
def test_include_directories_are_read_from_every_spelling_of_the_flags(
    flags: list[str], dirs: list[str]
) -> None:
    from brainevent.platforms.languages import flag_include_dirs

    assert flag_include_dirs(flags) == [Path(d) for d in dirs]
