"""Generated code is pinned by golden files, and each golden compiles with the real g++.

Regenerate after an intended change with:
BRAINEVENT_UPDATE_GOLDEN=1 pytest tests/codegen/test_codegen_golden.py
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from brainevent.codegen import render_binding, render_decoder, render_kernel_unit
from brainevent.headers import INCLUDE_DIR, xla_include_dir
from brainevent.platform_table import BUILD_PLATFORMS
from brainevent.spec.model import FunctionSpec, Param, Role
from brainevent.vocabulary import BindingTarget

GOLDEN = Path(__file__).parent / "golden"

VECTOR_ADD = FunctionSpec(
    "vector_add",
    (
        Param(Role.ARG, "a", None, "const BE::Tensor"),
        Param(Role.ARG, "b", None, "const BE::Tensor"),
        Param(Role.RET, "out", None, "BE::Tensor"),
        Param(Role.STREAM, "stream", None, "int64_t"),
    ),
    "my_kernels.cpp",
    4,
)
SCALE_BY = FunctionSpec(
    "scale_by",
    (
        Param(Role.ARG, "x", None, "const BE::Tensor"),
        Param(Role.RET, "out", None, "BE::Tensor"),
        Param(Role.ATTR, "scale_factor", "float32", "float"),
        Param(Role.ATTR, "count", "int64", "const int64_t&"),
        Param(Role.STREAM, "stream", None, "int64_t"),
    ),
    "my_kernels.cpp",
    12,
)
SUM_WITH_SCRATCH = FunctionSpec(
    "sum_with_scratch",
    (
        Param(Role.ARG, "x", None, "const BE::Tensor"),
        Param(Role.RET, "out", None, "BE::Tensor"),
        Param(Role.SCRATCH, "work", None, "BE::Scratch", 4096),
        Param(Role.STREAM, "stream", None, "int64_t"),
    ),
    "scratch_kernels.cpp",
    3,
)
DECLARED = FunctionSpec(
    "declared",
    (
        Param(Role.ARG, "x", None, "const BE::Tensor"),
        Param(Role.RET, "same", None, "BE::Tensor", None, "like(x)"),
        Param(Role.RET, "mask", None, "BE::Tensor", None, "like(x):bool"),
        Param(Role.RET, "table", None, "BE::Tensor", None, "(n,4):float32"),
        Param(Role.RET, "scalar", None, "BE::Tensor", None, "():int64"),
        Param(Role.ATTR, "n", "int32", "int"),
    ),
    "declared.cpp",
    2,
)
SCRATCH_SOURCE = """#include "brainevent/common.h"

void sum_with_scratch(const BE::Tensor x, BE::Tensor out, BE::Scratch work, int64_t stream) {}
"""
USER_SOURCE = """#include "brainevent/common.h"

// @BE vector_add arg arg ret stream
void vector_add(const BE::Tensor a, const BE::Tensor b, BE::Tensor out, int64_t stream) {}

void scale_by(const BE::Tensor x, BE::Tensor out, float scale_factor, const int64_t& count, int64_t stream) {}
"""

# The binding targets of the built-in platforms, as the platform table describes them.
CPU, CUDA = (BindingTarget(tag, BUILD_PLATFORMS[tag].binding_defines) for tag in ("cpu", "cuda"))

CASES = {
    "binding_cpu.cpp": lambda: render_binding("my_kernels", [VECTOR_ADD, SCALE_BY], target=CPU),
    "binding_cuda.cpp": lambda: render_binding("my_kernels", [VECTOR_ADD], target=CUDA),
    "kernel_unit.cpp": lambda: render_kernel_unit(
        "my_kernels.cpp",
        USER_SOURCE,
        [VECTOR_ADD, SCALE_BY],
        render_binding("my_kernels", [VECTOR_ADD, SCALE_BY], target=CPU),
    ),
    "binding_declared_cpu.cpp": lambda: render_binding("declared_kernels", [DECLARED], target=CPU),
    "decoder_cpu.cpp": lambda: render_decoder(target=CPU),
    "decoder_cuda.cpp": lambda: render_decoder(target=CUDA),
    "binding_scratch_cuda.cpp": lambda: render_binding("scratch_kernels", [SUM_WITH_SCRATCH], target=CUDA),
    "kernel_unit_scratch.cpp": lambda: render_kernel_unit(
        "scratch_kernels.cpp",
        SCRATCH_SOURCE,
        [SUM_WITH_SCRATCH],
        render_binding("scratch_kernels", [SUM_WITH_SCRATCH], target=CPU),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_code_matches_golden(name: str) -> None:
    text = CASES[name]()
    path = GOLDEN / name
    if os.environ.get("BRAINEVENT_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{name} changed; regenerate with BRAINEVENT_UPDATE_GOLDEN=1 if intended"


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_compiles(name: str, tmp_path: Path, gxx: str) -> None:
    flags = [
        "-std=c++17",
        "-fPIC",
        "-Wall",
        "-Wextra",
        "-Wformat-security",  # on by default in some distributions' compilers
        "-Werror",
        "-Wno-unused-parameter",
        "-I",
        str(INCLUDE_DIR),
    ]
    flags += ["-isystem", str(xla_include_dir())]
    done = subprocess.run(
        [gxx, *flags, "-c", str(GOLDEN / name), "-o", str(tmp_path / "out.o")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
