"""A ``jax.export``ed program of ``cuda_kernel`` calls carries their compiled kernels: a fresh
process that has neither the source nor a trace replays it (``brainevent.deserialize``).

Host tier: exported for CUDA without a GPU, the serialized program holds the cubins and a
fresh process decodes each call's kernel into the launcher; GPU tier: the fresh process runs it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from jax import export

import brainevent
from brainevent.launchers.cubin import EXPORT_TARGET

from ..conftest import have_gpu
from .kernels import VECTOR_ADD, skip_without_nvrtc

pytestmark = pytest.mark.host  # the launcher is built by the host compiler, the kernels by NVRTC
SRC = Path(__file__).resolve().parents[2] / "src"
N = 1000


@pytest.fixture(scope="module", autouse=True)
def _nvrtc() -> None:
    skip_without_nvrtc()


def vector_add(**kw: Any) -> Any:
    spec = jax.ShapeDtypeStruct((N,), np.float32)
    return brainevent.cuda_kernel(VECTOR_ADD, "add", spec, launch_dims=N, n=N, **kw)


def fresh(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``code`` in a new interpreter, in an empty directory: no kernel source anywhere near."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    prelude = "import sys\nimport brainevent\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def test_export_checks_list_the_cuda_kernel_target_before_any_trace() -> None:
    # The docs' order: export_checks() is evaluated before export traces the function.
    checks = brainevent.export_checks()
    assert EXPORT_TARGET in {c.is_custom_call() for c in checks}
    spec = jax.ShapeDtypeStruct((N,), np.float32)
    f = vector_add(compute_capability="sm_90")
    exported = export.export(jax.jit(f), platforms=["cuda"], disabled_checks=checks)(spec, spec)
    assert EXPORT_TARGET in exported.mlir_module()


def test_the_serialized_program_holds_each_cubin_and_a_fresh_process_decodes_it(tmp_path: Path) -> None:
    from brainevent.nvrtc.cache import Request, compile_cached
    from brainevent.nvrtc.source import KernelSource

    spec = jax.ShapeDtypeStruct((N,), np.float32)
    f = vector_add(compute_capability=["sm_80", "sm_90"])
    exported = export.export(jax.jit(f), platforms=["cuda"], disabled_checks=brainevent.export_checks())(
        spec, spec
    )
    blob = exported.serialize()
    for arch in ("sm_80", "sm_90"):
        cubin = compile_cached(Request(KernelSource.read(VECTOR_ADD, (), ()), ("add",), arch))[0].code
        assert cubin in blob, arch
    (tmp_path / "add.bin").write_bytes(blob)
    # The fresh process: the program's one call, its kernel decoded by the launcher (as XLA's
    # instantiation does on a GPU); nothing of NVRTC is imported, no source is read.
    done = fresh(
        """
        from jax._src.interpreters import mlir
        from jax._src.lib.mlir import ir
        from brainevent.launchers.cubin import export_launcher

        exported = brainevent.deserialize(open("add.bin", "rb").read())
        calls = []

        def walk(op):
            for block in (b for region in op.regions for b in region):
                for inner in block:
                    if inner.name == "stablehlo.custom_call":
                        config = ir.DictAttr(inner.attributes["mhlo.backend_config"])
                        target = ir.StringAttr(inner.attributes["call_target_name"]).value
                        kernel = ir.StringAttr(config["kernel"]).value_bytes
                        calls.append((target, ir.IntegerAttr(config["kernel_id"]).value, kernel))
                    walk(inner)

        with mlir.make_ir_context():
            walk(ir.Module.parse(exported.mlir_module()).operation)
        assert len(calls) == 1, calls
        target, kernel_id, kernel = calls[0]
        assert target in brainevent.list_registered_targets(), brainevent.list_registered_targets()
        library = export_launcher().library
        assert library.be_cubin_register_blob(kernel_id, kernel, len(kernel)) == b""
        assert library.be_cubin_register_blob(kernel_id, kernel, len(kernel)) == b""  # once
        print(target, len(kernel), sorted(m for m in sys.modules if m.startswith("brainevent.nvrtc")))
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[0] == EXPORT_TARGET and done.stdout.rstrip().endswith("[]"), done.stdout


def test_deserialize_registers_nothing_for_a_program_without_cuda_kernel_calls(tmp_path: Path) -> None:
    x = np.arange(4, dtype=np.float32)
    (tmp_path / "sin.bin").write_bytes(export.export(jax.jit(jax.numpy.sin))(x).serialize())
    done = fresh(
        """
        import numpy as np

        again = brainevent.deserialize(open("sin.bin", "rb").read())
        x = np.arange(4, dtype=np.float32)
        np.testing.assert_allclose(np.asarray(again.call(x)), np.sin(x), rtol=1e-6)
        print(brainevent.list_registered_targets())
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]", done.stdout  # no launcher built or registered


def test_a_malformed_kernel_attribute_is_refused_with_a_reason() -> None:
    from brainevent.launchers.cubin import Image, Param, export_launcher, kernel_blob

    blob = kernel_blob("add", (4, 1, 1), (256, 1, 1), [Param(0, 0, 4)], 1, {90: Image(b"cubin", 0)})
    library = export_launcher().library
    assert library.be_cubin_register_blob(7001, blob[:-1], len(blob) - 1).startswith(
        b"the kernel attribute is malformed"
    )
    huge = blob[:72] + (2**62).to_bytes(8, "little") + blob[80:]  # a params count past the blob
    assert b"malformed" in library.be_cubin_register_blob(7002, huge, len(huge))
    older = (2).to_bytes(8, "little") + blob[8:]
    assert b"another version of brainevent" in library.be_cubin_register_blob(7003, older, len(older))
    # The checks above come before any driver call; a well-formed blob is then registered (and,
    # where a GPU is, loaded: this fake image is refused by the driver, naming it).
    if not have_gpu():
        assert library.be_cubin_register_blob(7004, blob, len(blob)) == b""


@pytest.mark.gpu
def test_a_fresh_process_runs_the_exported_program_without_its_source(tmp_path: Path) -> None:
    x = np.linspace(-2, 3, N, dtype=np.float32)
    y = np.cos(np.arange(N, dtype=np.float32))
    add = vector_add()

    def program(x: Any, y: Any) -> Any:  # a loop: XLA may capture the launch in a CUDA graph
        return jax.lax.fori_loop(0, 10, lambda _, v: add(v, y), x)

    exported = export.export(jax.jit(program), disabled_checks=brainevent.export_checks())(x, y)
    (tmp_path / "program.bin").write_bytes(exported.serialize())
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    done = fresh(
        """
        import jax
        import numpy as np

        x, y = np.load("x.npy"), np.load("y.npy")
        exported = brainevent.deserialize(open("program.bin", "rb").read())
        got = np.asarray(jax.jit(exported.call)(x, y))
        np.testing.assert_allclose(got, x + 10 * y, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(exported.call(x, y)), got, rtol=0)
        print(sorted(m for m in sys.modules if m.startswith("brainevent.nvrtc")))
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]", done.stdout  # nothing compiled: the program's cubins ran
