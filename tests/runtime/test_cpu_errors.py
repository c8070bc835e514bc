"""Failures inside kernels and at call time become Python exceptions; the process survives."""

from __future__ import annotations

import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent import CompileError, KernelCallError

FAILING = r"""
#include <stdexcept>
#include "brainevent/common.h"

// @BE checked arg ret attr.limit:int32
void checked(const BE::Tensor x, BE::Tensor out, int32_t limit) {
    BE_CHECK(x.numel() <= limit) << "too many elements: " << x.numel() << " > " << limit;
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i];
}

// @BE throws_std arg ret
void throws_std(const BE::Tensor x, BE::Tensor out) {
    throw std::out_of_range("index 7 is past the end");
}

// @BE throws_int arg ret
void throws_int(const BE::Tensor x, BE::Tensor out) {
    if (x.numel() > 0) throw 42;
}

// @BE small_count arg ret attr.count:uint8
void small_count(const BE::Tensor x, BE::Tensor out, uint8_t count) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = count;
}

// @BE wrong_type arg ret
void wrong_type(const BE::Tensor x, BE::Tensor out) {
    (void)x.data_ptr<double>();
}
"""


# A generated translation unit (src/k0_<stem>.cpp) followed by a line number: what the
# compiler and __FILE__ would show without the #line directives.
GENERATED_WITH_LINE = re.compile(r"k\d+_\w+\.(?:cpp|cu):\d")


def _error_lines(log_text: str) -> list[str]:
    return [line for line in log_text.splitlines() if ": error" in line]


@pytest.fixture(scope="module")
def failing() -> brainevent.CompiledModule:
    return brainevent.load_cpp_inline(name="err_failing", cpp_sources=FAILING)


def _run(target: str, x: jax.Array, **attrs: object) -> np.ndarray:
    out = jax.ffi.ffi_call(target, jax.ShapeDtypeStruct(x.shape, x.dtype))(x, **attrs)
    return np.asarray(out)


def test_be_check_failure_raises_with_function_line_and_message(
    failing: brainevent.CompiledModule,
) -> None:
    x = jnp.ones(10, jnp.float32)
    with pytest.raises(jax.errors.JaxRuntimeError) as info:
        _run("err_failing.checked", x, limit=3)
    text = str(info.value)
    # The user's file name and line (from #line), not the generated unit (src/k0_err_failing.cpp).
    assert "err_failing.checked (err_failing.cpp:6): err_failing.cpp:7: check failed: " in text
    assert "x.numel() <= limit: too many elements: 10 > 3" in text
    assert "k0_" not in text and "src/" not in text
    # The process survives and the kernel still works afterwards.
    np.testing.assert_array_equal(_run("err_failing.checked", x, limit=100), np.ones(10))


def test_std_exception_becomes_python_error(failing: brainevent.CompiledModule) -> None:
    pattern = r"uncaught C\+\+ exception: index 7 is past the end"
    with pytest.raises(jax.errors.JaxRuntimeError, match=pattern):
        _run("err_failing.throws_std", jnp.ones(3, jnp.float32))


def test_exception_of_any_type_becomes_python_error(failing: brainevent.CompiledModule) -> None:
    # The trampoline has no try/catch: what the entry throws unwinds to the shared decoder.
    with pytest.raises(
        jax.errors.JaxRuntimeError,
        match=r"err_failing\.throws_int \(err_failing\.cpp:\d+\): uncaught C\+\+ exception of unknown type",
    ):
        _run("err_failing.throws_int", jnp.ones(3, jnp.float32))
    np.testing.assert_array_equal(
        _run("err_failing.checked", jnp.ones(2, jnp.float32), limit=100), np.ones(2)
    )


def test_typed_data_ptr_checks_dtype(failing: brainevent.CompiledModule) -> None:
    with pytest.raises(
        jax.errors.JaxRuntimeError, match=r"data_ptr<float64>\(\) on a tensor of dtype float32"
    ):
        _run("err_failing.wrong_type", jnp.ones(3, jnp.float32))


@pytest.mark.parametrize(
    ("attrs", "pattern"),
    [
        (
            {"limit": 2**40},
            r"attribute 'limit' expects int32, got int64 1099511627776: the value is out of range",
        ),
        # Below the type's minimum: the lower bound of the range check.
        (
            {"limit": -(2**31) - 1},
            r"attribute 'limit' expects int32, got int64 -2147483649: the value is out of range",
        ),
        ({"limit": 2.5}, r"attribute 'limit' expects int32, got float64 2.5.*pass an int"),
        ({}, r"missing attribute 'limit' \(int32\)"),
        ({"limit": 1, "bogus": 2}, r"unexpected attribute 'bogus'; this function takes limit"),
    ],
)
def test_raw_ffi_call_attribute_errors(
    failing: brainevent.CompiledModule, attrs: dict[str, object], pattern: str
) -> None:
    with pytest.raises(jax.errors.JaxRuntimeError, match=pattern):
        _run("err_failing.checked", jnp.ones(1, jnp.float32), **attrs)


@pytest.mark.parametrize("count", [0, 255])
def test_raw_ffi_call_unsigned_attribute_bounds_are_accepted(
    failing: brainevent.CompiledModule, count: int
) -> None:
    out = _run("err_failing.small_count", jnp.ones(2, jnp.float32), count=count)
    np.testing.assert_array_equal(out, [count, count])


@pytest.mark.parametrize(("count", "shown"), [(-1, "int64 -1"), (256, "int64 256")])
def test_raw_ffi_call_unsigned_attribute_out_of_range(
    failing: brainevent.CompiledModule, count: int, shown: str
) -> None:
    pattern = rf"attribute 'count' expects uint8, got {shown}: the value is out of range"
    with pytest.raises(jax.errors.JaxRuntimeError, match=pattern):
        _run("err_failing.small_count", jnp.ones(2, jnp.float32), count=count)


def test_raw_ffi_call_int32_minimum_is_accepted(failing: brainevent.CompiledModule) -> None:
    # The lowest int32 is in range (the check is not off by one); the BE_CHECK then fails.
    with pytest.raises(jax.errors.JaxRuntimeError, match=r"too many elements: 1 > -2147483648"):
        _run("err_failing.checked", jnp.ones(1, jnp.float32), limit=-(2**31))


def test_raw_ffi_call_wrong_operand_count(failing: brainevent.CompiledModule) -> None:
    x = jnp.ones(2, jnp.float32)
    call = jax.ffi.ffi_call("err_failing.checked", jax.ShapeDtypeStruct(x.shape, x.dtype))
    with pytest.raises(
        jax.errors.JaxRuntimeError, match=r"expected 1 input array\(s\) and 1 result\(s\), got 2"
    ):
        np.asarray(call(x, x, limit=5))


def test_a_misspelt_target_names_the_modules_targets(failing: brainevent.CompiledModule) -> None:
    x = jnp.ones(2, jnp.float32)
    spec = jax.ShapeDtypeStruct(x.shape, x.dtype)
    with pytest.raises(KernelCallError, match=r"ffi_call\('err_failing.chekced'\): no FFI target") as info:
        brainevent.ffi_call("err_failing.chekced", spec)(x, limit=5)
    targets = str(info.value).split("registered ")[1]
    assert targets.startswith("'err_failing.checked', ") and "'err_failing.throws_std'" in targets, info.value
    assert "list_registered_targets" in str(info.value) and info.value.target == "err_failing.chekced"
    # The target spelt right runs; the module's attribute misspelt suggests the function.
    np.testing.assert_array_equal(np.asarray(brainevent.ffi_call("err_failing.checked", spec)(x, limit=5)), x)
    with pytest.raises(AttributeError, match=r"no function 'chekced'.* Did you mean 'checked'\?"):
        failing.chekced  # noqa: B018


@pytest.mark.parametrize(
    ("args", "attrs", "pattern"),
    [
        (2, {"limit": 1}, r"expected 1 input array\(s\)"),
        (1, {}, r"missing attribute\(s\) \['limit'\]"),
        (1, {"limit": 1, "x": 2}, r"unexpected attribute\(s\) \['x'\]"),
        (1, {"limit": 2**31}, r"attribute 'limit' = 2147483648 is out of range for int32"),
        (
            1,
            {"limit": -(2**31) - 1},
            r"attribute 'limit' = -2147483649 is out of range for int32 \[-2147483648, 2147483647\]",
        ),
        (1, {"limit": "3"}, r"attribute 'limit' expects int32, got '3'"),
    ],
)
def test_call_sugar_validates_before_calling(
    failing: brainevent.CompiledModule, args: int, attrs: dict[str, object], pattern: str
) -> None:
    x = jnp.ones(2, jnp.float32)
    with pytest.raises(KernelCallError, match=pattern):
        failing.checked(*([x] * args), **attrs)


def test_compile_error_points_at_inline_line() -> None:
    source = (
        '#include "brainevent/common.h"\n\n// @BE broken arg ret\n'
        "void broken(const BE::Tensor x, BE::Tensor out) {\n    undeclared_symbol += 1;\n}\n"
    )
    with pytest.raises(CompileError) as info:
        brainevent.load_cpp_inline(name="err_broken_inline", cpp_sources=source)
    message = str(info.value)
    first_line = message.splitlines()[0]
    headline = "compiling module 'err_broken_inline' failed: err_broken_inline.cpp:5:5: error"
    assert first_line.startswith(headline)
    assert "undeclared_symbol" in first_line
    log_path = info.value.log_path
    assert f"Full build log: {log_path}" in message
    # The compiler itself named the user's file (through #line), before any rewriting of
    # the log: its raw output names no generated unit with a line number.
    raw = Path(log_path).read_text()
    errors = _error_lines(raw)
    assert len(errors) == 1 and errors[0].startswith("err_broken_inline.cpp:5:5: error:"), errors
    assert "undeclared_symbol" in errors[0]
    assert not GENERATED_WITH_LINE.search(raw) and not GENERATED_WITH_LINE.search(message)


def test_compile_error_points_at_file_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    src = tmp_path / "broken_file.cpp"
    src.write_text(
        '#include "brainevent/common.h"\n// @BE f arg ret\n'
        'void f(const BE::Tensor x, BE::Tensor out) {\n  int y = "text";\n}\n'
    )
    with pytest.raises(CompileError) as info:
        brainevent.load_cpp_file(src)
    message = str(info.value)
    assert message.splitlines()[0].startswith(f"compiling module 'broken_file' failed: {src}:4:")
    raw = Path(info.value.log_path).read_text()
    errors = _error_lines(raw)
    assert errors and all(line.startswith(f"{src}:4:") for line in errors), errors
    assert not GENERATED_WITH_LINE.search(raw) and not GENERATED_WITH_LINE.search(message)


def test_failed_build_is_not_cached(tmp_path) -> None:  # type: ignore[no-untyped-def]
    source = (
        '#include "brainevent/common.h"\n// @BE g arg ret\n'
        "void g(const BE::Tensor x, BE::Tensor out) { nope(); }\n"
    )
    for _ in range(2):  # the second attempt compiles again and fails the same way
        with pytest.raises(CompileError):
            brainevent.load_cpp_inline(
                name="err_not_cached", cpp_sources=source, build_directory=str(tmp_path)
            )
    entries = [p for p in (tmp_path / "v1" / "err_not_cached").iterdir() if p.is_dir()]
    assert entries == []
