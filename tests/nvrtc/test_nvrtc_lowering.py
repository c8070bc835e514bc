"""Lowered for CUDA on a machine without a GPU: one launch of the cubin launcher per call,
its kernel id fixed by the content (the compiled code, launch and scalars)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest

import brainevent
from brainevent.nvrtc.kernel import ctype

from .kernels import AXPY, HISTOGRAM, VECTOR_ADD, skip_without_nvrtc

# The launcher library is built by the host compiler once per machine (no nvcc); the kernels
# are compiled by NVRTC.
pytestmark = pytest.mark.host

SPEC = jax.ShapeDtypeStruct((4096,), np.float32)


@pytest.fixture(scope="module", autouse=True)
def _nvrtc() -> None:
    skip_without_nvrtc()


def lowered(f: Any, *specs: Any) -> str:
    return str(jax.jit(f).trace(*(specs or (SPEC, SPEC))).lower(lowering_platforms=("cuda",)).as_text())


def axpy(a: float = 2.0, **kw: Any) -> Any:
    return brainevent.cuda_kernel(
        AXPY,
        lambda x, y: f"axpy<{ctype(x.dtype)}>",
        SPEC,
        launch_dims=lambda x, y: x.size,
        compute_capability="sm_90",
        a=a,
        n=lambda x, y: x.size,
        **kw,
    )


def test_a_cuda_lowering_emits_one_launch_with_a_content_id() -> None:
    text = lowered(axpy())
    calls = re.findall(r"stablehlo.custom_call @([\w.]+)\(.*kernel_id = (\d+)", text)
    assert len(calls) == 1 and calls[0][0] == "brainevent_cubin.launch", text
    assert re.findall(r"kernel_id = (\d+)", lowered(axpy())) == [calls[0][1]]  # same content, same id
    changed = re.findall(r"kernel_id = (\d+)", lowered(axpy(a=3.0)))
    assert changed and changed != [calls[0][1]]


def test_sequential_vmap_lowers_to_a_loop_around_the_launch() -> None:
    batched = jax.ShapeDtypeStruct((3, 4096), np.float32)
    for method in ("sequential", "expand_dims"):
        text = lowered(jax.vmap(axpy(vmap_method=method), in_axes=(0, None)), batched, SPEC)
        assert "stablehlo.while" in text and text.count("brainevent_cubin.launch") == 1, method


def test_a_fori_loop_keeps_one_launch_in_its_body() -> None:
    add = brainevent.cuda_kernel(VECTOR_ADD, "add", SPEC, launch_dims=4096, compute_capability=90, n=4096)
    text = lowered(lambda x, y: jax.lax.fori_loop(0, 1000, lambda _, v: add(v, y), x))
    assert "stablehlo.while" in text and text.count("brainevent_cubin.launch") == 1


def test_def_cuda_kernel_lowers_inside_the_primitive() -> None:
    op = brainevent.XLACustomKernel(
        "nvrtc_axpy_lowering", outs=lambda x, y, **_: jax.ShapeDtypeStruct(x.shape, x.dtype)
    )
    op.def_cuda_kernel(
        AXPY,
        lambda ins, outs: f"axpy<{ctype(ins[0].dtype)}>",
        launch_dims=lambda ins, outs: outs[0].size,
        compute_capability="sm_90",
        n=lambda ins, outs: outs[0].size,
    )
    text = lowered(lambda x, y: op(x, y, a=0.5))
    assert text.count("brainevent_cubin.launch") == 1
    from brainevent.errors import KernelCallError

    with pytest.raises(KernelCallError, match="no scalar parameter 'alpha'"):
        lowered(lambda x, y: op(x, y, a=0.5, alpha=1.0))


NO_NVCC = r"""
import shutil, subprocess, sys
import jax, numpy as np
assert shutil.which("nvcc") is None, shutil.which("nvcc")
import brainevent
from brainevent.launchers.cubin import launcher_for
sys.path.insert(0, sys.argv[1])
from kernels import VECTOR_ADD
spec = jax.ShapeDtypeStruct((4096,), np.float32)
add = brainevent.cuda_kernel(VECTOR_ADD, "add", spec, launch_dims=4096, compute_capability="sm_80", n=4096)
text = jax.jit(add).trace(spec, spec).lower(lowering_platforms=("cuda",)).as_text()
assert text.count("brainevent_cubin.launch") == 1, text
library = launcher_for(2, 1).library._name
needed = subprocess.run(["readelf", "-d", library], capture_output=True, text=True).stdout
assert "libcuda" not in needed and "libnvrtc" not in needed, needed
print("ok")
"""


def test_the_launcher_builds_and_a_kernel_lowers_with_nvcc_hidden(tmp_path: Path) -> None:
    """pip CUDA 12 has no nvcc: the launcher is built by the host compiler alone and links no
    CUDA library (the driver API is dlopen'ed when a kernel first runs)."""
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "CUDA_PATH")}
    host_bin = str(Path(os.path.realpath(sys.executable)).parent)
    env.update(
        PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"),
        PATH=os.pathsep.join([host_bin, "/usr/bin", "/bin"]),
        BRAINEVENT_NVCC=str(tmp_path / "no-nvcc"),
        BRAINEVENT_CACHE_DIR=str(tmp_path / "cache"),
    )
    done = subprocess.run(
        [sys.executable, "-c", NO_NVCC, str(Path(__file__).parent)], env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"


def test_batch_dims_prepare_the_kernel_for_one_element_and_mark_the_call_partitionable() -> None:
    seen: list[tuple[int, ...]] = []

    def size(x: Any, y: Any) -> int:
        seen.append(tuple(x.shape))
        return int(x.size)

    rows = jax.ShapeDtypeStruct((8, 512), np.float32)
    add = brainevent.cuda_kernel(
        VECTOR_ADD, "add", rows, launch_dims=size, compute_capability=90, num_batch_dims=1, n=size
    )
    text = lowered(add, rows, rows)
    assert seen and set(seen) == {(512,)}  # launch and scalars see one row
    assert text.count("brainevent_cubin.launch") == 1
    assert re.search(r'num_batch_dims = "1"', text), text
    whole = brainevent.cuda_kernel(VECTOR_ADD, "add", rows, launch_dims=512, compute_capability=90, n=512)
    assert re.findall(r"kernel_id = (\d+)", lowered(whole, rows, rows)) != re.findall(
        r"kernel_id = (\d+)", text
    )


def test_batch_dims_follow_the_primitive_into_def_cuda_kernel() -> None:
    seen: list[tuple[int, ...]] = []

    def size(ins: Any, outs: Any) -> int:
        seen.append(tuple(outs[0].shape))
        return int(outs[0].size)

    op = brainevent.XLACustomKernel(
        "nvrtc_add_rows", outs=lambda x, y, **_: jax.ShapeDtypeStruct(x.shape, x.dtype), num_batch_dims=1
    )
    op.def_cuda_kernel(VECTOR_ADD, "add", launch_dims=size, compute_capability="sm_90", n=size)
    rows = jax.ShapeDtypeStruct((8, 512), np.float32)
    text = lowered(lambda x, y: op(x, y), rows, rows)
    assert set(seen) == {(512,)} and re.search(r'num_batch_dims = "1"', text), (seen, text)
    seen.clear()
    batched = jax.ShapeDtypeStruct((3, 8, 512), np.float32)
    op_vmapped = jax.vmap(lambda x, y: op(x, y), in_axes=(0, None))
    text = lowered(op_vmapped, batched, rows)  # the primitive's default vmap: one more batch dim
    assert set(seen) == {(512,)} and text.count("brainevent_cubin.launch") == 1, (seen, text)


def _launch_types(text: str) -> list[str]:
    """The operand and result types of each launch in ``text``."""
    return re.findall(r"stablehlo.custom_call @brainevent_cubin\w*\.launch.*: (\(.*\) -> .*)", text)


def test_an_operand_whose_batch_dim_is_1_reaches_the_launch_broadcast() -> None:
    """docs/nvrtc.md: an operand whose batch dim is 1 is broadcast over the batch, for
    cuda_kernel and def_cuda_kernel alike, at the call and under vmap."""
    rows = jax.ShapeDtypeStruct((8, 512), np.float32)
    one = jax.ShapeDtypeStruct((1, 512), np.float32)
    whole = "(tensor<8x512xf32>, tensor<8x512xf32>) -> tensor<8x512xf32>"
    size = lambda x, y: x.size  # noqa: E731
    add = brainevent.cuda_kernel(
        VECTOR_ADD, "add", rows, launch_dims=size, compute_capability=90, num_batch_dims=1, n=size,
        vmap_method="expand_dims",
    )  # fmt: skip
    assert _launch_types(lowered(add, rows, one)) == [whole]
    assert _launch_types(lowered(add, one, rows)) == [whole]
    batched = jax.ShapeDtypeStruct((3, 8, 512), np.float32)
    wide = "(tensor<3x8x512xf32>, tensor<3x8x512xf32>) -> tensor<3x8x512xf32>"
    assert _launch_types(lowered(jax.vmap(add, in_axes=(0, None)), batched, rows)) == [wide]
    op = brainevent.XLACustomKernel(
        "nvrtc_add_rows_broadcast",
        outs=lambda x, y, **_: jax.ShapeDtypeStruct(np.broadcast_shapes(x.shape, y.shape), x.dtype),
        num_batch_dims=1,
        vmap_method="expand_dims",
    )
    op.def_cuda_kernel(
        VECTOR_ADD, "add", launch_dims=lambda ins, outs: outs[0].size, compute_capability="sm_90",
        n=lambda ins, outs: outs[0].size,
    )  # fmt: skip
    assert _launch_types(lowered(lambda x, y: op(x, y), rows, one)) == [whole]
    assert _launch_types(lowered(jax.vmap(lambda x, y: op(x, y), in_axes=(0, None)), batched, rows)) == [wide]


def test_batch_dims_are_checked() -> None:
    from brainevent.errors import KernelCallError

    rows = jax.ShapeDtypeStruct((8, 512), np.float32)
    for bad in (0, True, 1.5):
        with pytest.raises(KernelCallError, match="num_batch_dims must be a positive int"):
            brainevent.cuda_kernel(VECTOR_ADD, "add", rows, launch_dims=512, num_batch_dims=bad, n=512)
    with pytest.raises(KernelCallError, match="cannot be combined"):
        brainevent.cuda_kernel(
            VECTOR_ADD, "add", rows, launch_dims=512, num_batch_dims=1, input_output_aliases={0: 0}, n=512
        )
    add = brainevent.cuda_kernel(
        VECTOR_ADD, "add", rows, launch_dims=512, compute_capability=90, num_batch_dims=1, n=512
    )
    with pytest.raises(KernelCallError, match="share its first 1 dims"):
        lowered(add, rows, jax.ShapeDtypeStruct((4, 512), np.float32))


def test_the_pip_cuda12_check_script_runs_its_checks_with_nvcc_hidden() -> None:
    """The script a CUDA 12 GPU host runs (here with the NVRTC this environment has)."""
    from brainevent.nvrtc.process import nvrtc_info
    from brainevent.nvrtc.toolkit import runtime_include_dirs

    if not runtime_include_dirs():  # e.g. the cpu image: NVRTC's wheel without nvidia-cuda-runtime
        pytest.skip("not applicable: no CUDA runtime headers beside NVRTC (the script compiles cuda_fp16.h)")
    script = Path(__file__).with_name("pip_cuda12_check.py")
    major = str(nvrtc_info().version[0])
    done = subprocess.run(
        [sys.executable, str(script), "--expect-major", major], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "nvcc on PATH: none" in done.stdout and "found_via: " in done.stdout, done.stdout
    assert "compiled half_add for sm_80" in done.stdout and "launcher built without nvcc" in done.stdout


def histogram(bins: int = 8, batch: tuple[int, ...] = (), **kw: Any) -> Any:
    return brainevent.cuda_kernel(
        HISTOGRAM, "histogram", jax.ShapeDtypeStruct((*batch, bins), np.int32), launch_dims=lambda x: x.size,
        compute_capability="sm_90", n=lambda x: x.size, bins=bins, zeros=True, **kw,
    )  # fmt: skip


def test_a_zeroed_result_lowers_as_zeros_passed_in_aliased_to_it() -> None:
    ids = jax.ShapeDtypeStruct((4096,), np.int32)
    text = lowered(histogram(), ids)
    call = next(line for line in text.splitlines() if "brainevent_cubin.launch" in line)
    assert "output_operand_aliases" in call and "operand_index = 1" in call, call
    assert "(tensor<4096xi32>, tensor<8xi32>) -> tensor<8xi32>" in call, call  # the zeros, then the result
    assert re.search(r"stablehlo.constant dense<0>", text), text
    # The kernel is the same one: the launcher skips the cleared input, the kernel never sees it.
    plain = brainevent.cuda_kernel(
        HISTOGRAM, "histogram", jax.ShapeDtypeStruct((8,), np.int32), launch_dims=lambda x: x.size,
        compute_capability="sm_90", n=lambda x: x.size, bins=8,
    )  # fmt: skip
    assert re.findall(r"kernel_id = (\d+)", lowered(plain, ids)) == re.findall(r"kernel_id = (\d+)", text)
    # With batch dims, and under vmap: the zeros take the whole batch.
    rows = jax.ShapeDtypeStruct((3, 4096), np.int32)
    batched = lowered(histogram(batch=(3,), num_batch_dims=1, vmap_method="sequential"), rows)
    assert "output_operand_aliases" in batched and "tensor<3x8xi32>" in batched, batched
    for method in ("sequential", "expand_dims", "broadcast_all"):  # per batch element, each zeroed
        assert "output_operand_aliases" in lowered(jax.vmap(histogram(vmap_method=method)), rows), method


def test_a_bad_zeros_value_is_refused_before_anything_compiles() -> None:
    from brainevent.errors import KernelCallError

    with pytest.raises(KernelCallError) as info:  # where the function is made: nothing is traced yet
        brainevent.cuda_kernel(HISTOGRAM, "histogram", SPEC, launch_dims=8, n=8, bins=8, zeros=1)
    for word in ("histogram", "zeros=1", "1 result(s)", "Fix: e.g. zeros=0"):
        assert word in str(info.value), (word, str(info.value))


def test_vmap_of_a_jitted_kernel_without_a_method_names_the_keyword() -> None:
    from brainevent.errors import KernelCallError

    batched = jax.ShapeDtypeStruct((3, 4096), np.float32)
    for f in (jax.vmap(jax.jit(axpy()), in_axes=(0, None)), jax.jit(jax.vmap(axpy(), in_axes=(0, None)))):
        with pytest.raises(KernelCallError) as info:
            lowered(f, batched, SPEC)
        for word in ("jax.vmap needs a vmap method", "vmap_method='sequential'", "cuda_kernel"):
            assert word in str(info.value), (word, str(info.value))
