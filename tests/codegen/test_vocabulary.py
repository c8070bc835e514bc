"""The binding vocabulary (brainevent.vocabulary) and the C++ headers agree, and every
consumer of it refuses a value it does not know instead of mishandling it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from brainevent.codegen import render_binding, render_decoder, render_kernel_unit
from brainevent.headers import (
    INCLUDE_DIR,
    entry_symbol,
    forward_symbol,
    handler_symbol,
    impl_symbol,
    xla_include_dir,
)
from brainevent.platform_table import BUILD_PLATFORMS
from brainevent.spec.bind import bind_tokens
from brainevent.spec.model import FunctionSpec, Param, Role
from brainevent.spec.signature import pick_one, scan_functions
from brainevent.spec.tokens import SpecToken
from brainevent.vocabulary import (
    INVALID_DTYPE,
    PLATFORM_ENUM,
    ROLE_ENUM,
    SCALAR_TYPES,
    SCALARS,
    BindingTarget,
    scalar,
)

HEADERS = INCLUDE_DIR / "brainevent"


def _enum(header: Path, name: str) -> dict[str, int]:
    """The enumerators of ``enum class <name>`` in ``header`` (explicit values only)."""
    text = header.read_text()
    found = re.search(rf"enum class {name}\b[^{{]*\{{([^}}]*)\}}", text)
    assert found is not None, f"enum class {name} not found in {header.name}"
    body = re.sub(r"//[^\n]*", "", found.group(1))
    out: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in body.split(","))):
        key, value = (s.strip() for s in item.split("="))
        out[key] = int(value)
    return out


def test_header_enums_match_the_vocabulary() -> None:
    dtypes = {s.cxx_enum: s.code for s in SCALARS} | {INVALID_DTYPE[0]: INVALID_DTYPE[1]}
    assert _enum(HEADERS / "dtype.h", "DType") == dtypes
    assert _enum(HEADERS / "ffi_function.h", "Role") == dict(ROLE_ENUM.values())
    assert _enum(HEADERS / "ffi_function.h", "Platform") == dict(PLATFORM_ENUM.values())
    assert [r for r in Role] == list(ROLE_ENUM)
    # every role has a parameter-row macro for the generator to write
    text = (HEADERS / "ffi_function.h").read_text()
    for spelling, _ in ROLE_ENUM.values():
        assert f"#define BE_{spelling.upper()}" in text


def _static_assert_table() -> str:
    lines = [
        '#include "brainevent/ffi_function.h"',
        "constexpr bool same(const char* a, const char* b) {",
        "  return *a == *b && (*a == '\\0' || same(a + 1, b + 1));",
        "}",
    ]
    for s in SCALARS:
        e = f"::BE::DType::{s.cxx_enum}"
        lines += [
            f'static_assert(static_cast<int>({e}) == {s.code}, "{s.name}: code");',
            f'static_assert(same(::BE::dtype_name({e}), "{s.name}"), "{s.name}: name");',
            f'static_assert(::BE::element_size({e}) == {s.bits // 8}, "{s.name}: size");',
        ]
    for role, (spelling, value) in ROLE_ENUM.items():
        lines.append(
            f'static_assert(static_cast<int>(::BE::ffi::Role::{spelling}) == {value}, "{role.value}");'
        )
    for tag, (spelling, value) in PLATFORM_ENUM.items():
        lines.append(f'static_assert(static_cast<int>(::BE::ffi::Platform::{spelling}) == {value}, "{tag}");')
    return "\n".join(lines) + "\n"


def _compile(gxx: str, source: Path, out: Path) -> None:
    flags = [
        "-std=c++17",
        "-fPIC",
        "-Wall",
        "-Werror",
        "-I",
        str(INCLUDE_DIR),
        "-isystem",
        str(xla_include_dir()),
    ]
    done = subprocess.run([gxx, *flags, "-c", str(source), "-o", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_cxx_values_match_the_vocabulary(gxx: str, tmp_path: Path) -> None:
    source = tmp_path / "table.cpp"
    source.write_text(_static_assert_table())
    _compile(gxx, source, tmp_path / "table.o")


def test_a_wrong_table_entry_fails_to_compile(gxx: str, tmp_path: Path) -> None:
    # the check above can fail: a vocabulary that disagrees with the header is refused
    source = tmp_path / "table.cpp"
    source.write_text(_static_assert_table().replace('"float32")', '"float64")'))
    with pytest.raises(AssertionError, match="float32: name"):
        _compile(gxx, source, tmp_path / "table.o")


def _defined_symbols(obj: Path) -> tuple[set[str], set[str]]:
    done = subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True)
    defined, undefined = set(), set()
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBR":  # global text/data/bss/read-only
            defined.add(parts[2])
    return defined, undefined


SPEC = FunctionSpec(
    "scale",
    (
        Param(Role.ARG, "x", None, "const BE::Tensor"),
        Param(Role.RET, "y", None, "BE::Tensor"),
        Param(Role.ATTR, "factor", "float32", "float"),
    ),
    "k.cpp",
    3,
)
EMPTY = FunctionSpec("nothing", (), "k.cpp", 9)


def _builtin(tag: str) -> BindingTarget:
    return BindingTarget(tag, BUILD_PLATFORMS[tag].binding_defines)


@pytest.mark.parametrize("tag", sorted(PLATFORM_ENUM))
def test_binding_exports_the_vocabulary_symbols(tag: str, gxx: str, tmp_path: Path) -> None:
    source = tmp_path / "binding.cpp"
    source.write_text(render_binding("m", [SPEC, EMPTY], target=_builtin(tag)))
    _compile(gxx, source, tmp_path / "binding.o")
    defined, undefined = _defined_symbols(tmp_path / "binding.o")
    for f in ("scale", "nothing"):
        names = {handler_symbol(f, command_buffer=False), handler_symbol(f, command_buffer=True)}
        names |= {forward_symbol(f), impl_symbol(f)}
        assert names <= defined, sorted(defined)
        assert entry_symbol(f) in undefined  # the trampoline lives in the kernel unit


def test_binding_target_names_the_platform_macro() -> None:
    target = BindingTarget("cuda", ("BE_BINDING_CUDA", "EXTRA_FLAG"))
    text = render_binding("m", [SPEC], target=target)
    assert ", Cuda,\n" in text
    assert "#define" not in text  # the macros configure the shared decoder, not the handlers
    assert "#define BE_BINDING_CUDA 1\n#define EXTRA_FLAG 1\n" in render_decoder(target=target)


def test_unknown_platform_and_dtype_are_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown binding platform 'hip'.*cpu, cuda"):
        BindingTarget("hip")
    with pytest.raises(ValueError, match="binding define 'A-B' is not a C identifier"):
        BindingTarget("cpu", ("A-B",))
    with pytest.raises(TypeError, match="target"):
        render_binding("m", [SPEC])  # type: ignore[call-arg]
    with pytest.raises(ValueError, match=r"unknown scalar type 'float8'.*complex128"):
        scalar("float8")
    assert [scalar(n) for n in SCALAR_TYPES] == list(SCALARS)


# A role the vocabulary does not have (as if added to one side only).
_ALIEN = "barrier"


def test_codegen_refuses_an_unknown_role() -> None:
    alien = FunctionSpec("f", (Param(_ALIEN, "w", None, "BE::Tensor"),), "k.cpp", 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"codegen._param_row: unhandled binding value 'barrier'"):
        render_binding("m", [alien], target=_builtin("cpu"))
    with pytest.raises(ValueError, match=r"codegen._call_arguments: unhandled binding value 'barrier'"):
        render_kernel_unit("k.cpp", "void f(BE::Tensor w) {}\n", [alien])


def test_bind_refuses_an_unknown_role() -> None:
    sig = pick_one("f", scan_functions("void f(BE::Tensor w) {}\n", "k.cpp"))
    assert sig is not None
    with pytest.raises(ValueError, match=r"spec.bind._mismatch: unhandled binding value 'barrier'"):
        bind_tokens(sig, [SpecToken(_ALIEN)])  # type: ignore[arg-type]
