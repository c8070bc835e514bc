"""Compile errors point at the fix: the user's source line quoted, a missing-include hint,
and the optional-header note only when the unknown name is one the left-out part declares."""

from __future__ import annotations

from pathlib import Path

import pytest

import brainevent

MISSING_SEMICOLON = r"""
#include "brainevent/common.h"
// @BE f arg ret:like(x)
void f(const BE::Tensor x, BE::Tensor out) {
    float* po = out.data_ptr<float>()
    po[0] = 1.0f;
}
"""

NO_INCLUDE = r"""
// @BE f arg ret
void f(const BE::Tensor x, BE::Tensor out) {
    out.data_ptr<float>()[0] = 1.0f;
}
"""

USES_STRING_WITHOUT_SAYING_SO = r"""
#include "brainevent/common.h"
// @BE f arg ret
void f(const BE::Tensor x, BE::Tensor out) {
    string_view_of_nothing s;
}
"""


def _compile_error(name: str, source: str) -> str:
    with pytest.raises(brainevent.CompileError) as info:
        brainevent.load_cpp_inline(name=name, cpp_sources=source, auto_register=False)
    return str(info.value)


def test_inline_error_quotes_the_line_of_the_string():
    text = _compile_error("err_quote_inline", MISSING_SEMICOLON)
    assert "line 6 of the inline source:" in text, text
    assert "5 |     float* po = out.data_ptr<float>()" in text, text
    assert "> 6 |     po[0] = 1.0f;" in text, text


def test_file_error_quotes_the_line_of_the_file(tmp_path: Path):
    path = tmp_path / "broken_kernel.cpp"
    path.write_text(MISSING_SEMICOLON)
    with pytest.raises(brainevent.CompileError) as info:
        brainevent.load_cpp_file(path, name="err_quote_file", auto_register=False)
    text = str(info.value)
    assert f"line 6 of {path}:" in text, text
    assert "> 6 |     po[0] = 1.0f;" in text, text


def test_syntax_error_gets_no_optional_header_note():
    text = _compile_error("err_no_note", MISSING_SEMICOLON)
    assert "BE_CHECK_HEADERS" not in text and "BE_STD_COMPLEX" not in text, text
    assert "Note:" not in text


def test_unrelated_unknown_name_gets_no_optional_header_note():
    text = _compile_error("err_unrelated_name", USES_STRING_WITHOUT_SAYING_SO)
    assert "string_view_of_nothing" in text
    assert "Note:" not in text, text


def test_missing_include_gets_a_hint_and_no_note():
    text = _compile_error("err_no_include", NO_INCLUDE)
    assert "does not include brainevent/common.h" in text, text
    assert '#include "brainevent/common.h"' in text
    assert "BE_CHECK_HEADERS" not in text and "Note:" not in text, text


@pytest.mark.unit
def test_note_is_kept_for_a_name_the_left_out_part_declares():
    from brainevent.build.diagnostics import compile_error

    log = (
        "g++ -DBE_CHECK_HEADERS=0 -DBE_STD_COMPLEX=0 -c k0.cpp\n"
        "helpers.h:3:5: error: 'BE_CHECK' was not declared in this scope\n"
    )
    text = str(compile_error("m", log, Path("/tmp/x.log")))
    assert "Note: brainevent left out the checking half" in text and "-DBE_CHECK_HEADERS=1" in text
    assert "BE_STD_COMPLEX" not in text.split("Note:")[1]
    log = "g++ -DBE_STD_COMPLEX=0 -c k0.cpp\nk.cpp:3:5: error: 'complex64' is not a member of 'BE'\n"
    assert "-DBE_STD_COMPLEX=1" in str(compile_error("m", log, Path("/tmp/x.log")))


def test_user_error_tracebacks_end_at_the_public_call(monkeypatch):
    import traceback

    for source, error in (
        (MISSING_SEMICOLON, brainevent.CompileError),
        (NO_INCLUDE.replace("ret", "rte"), None),
    ):
        with pytest.raises(error or brainevent.SpecError) as info:
            brainevent.load_cpp_inline(name="err_frames", cpp_sources=source, auto_register=False)
        frames = traceback.extract_tb(info.value.__traceback__)
        internal = [f for f in frames if "brainevent" in f.filename and "tests" not in f.filename]
        assert internal == [] and frames[-1].filename == __file__, frames  # the user's line last
    # On request, every frame stays (for reporting a bug in brainevent).
    monkeypatch.setenv("BRAINEVENT_FULL_TRACEBACK", "1")
    with pytest.raises(brainevent.CompileError) as info:
        brainevent.load_cpp_inline(name="err_frames", cpp_sources=MISSING_SEMICOLON, auto_register=False)
    assert len(traceback.extract_tb(info.value.__traceback__)) > 5


def test_printed_traceback_ends_at_the_users_line(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "user_script.py"
    script.write_text(
        "import brainevent\n"
        'brainevent.load_cpp_inline(name="err_printed", cpp_sources="void g() {}", functions=["nope"])\n'
    )
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    frames = [line for line in run.stderr.splitlines() if line.lstrip().startswith("File ")]
    assert run.returncode == 1 and "SpecError" in run.stderr, run.stderr
    assert frames == [f'  File "{script}", line 2, in <module>'], run.stderr
    assert "with_traceback" not in run.stderr and "noqa" not in run.stderr, run.stderr


def test_openmp_symbol_without_openmp_says_openmp_true_and_names_the_file_once():
    source = r"""
#include "brainevent/common.h"
#include <omp.h>
// @BE f arg ret:like(x)
void f(const BE::Tensor x, BE::Tensor out) { out.data_ptr<float>()[0] = omp_get_max_threads(); }
"""
    text = _compile_error("err_omp_symbol", source)
    headline = text.splitlines()[0]
    assert "undefined symbol 'omp_get_max_threads'" in headline, text
    assert "openmp=True" in headline and "-lname" not in headline, text
    assert headline.count("err_omp_symbol.cpp") == 1, headline
    assert text.count("openmp=True") == 1, text  # the summary once: the headline, not the body again
