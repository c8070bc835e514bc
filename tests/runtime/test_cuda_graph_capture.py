"""CUDA graphs: XLA's own dumps show whether brainevent's custom calls were captured.

The GPU tests run a jitted function in a fresh process (XLA reads its flags once) that
dumps what XLA compiled, and read from the dump whether the custom call ran inside a
command buffer: with enable_cuda_graphs() or the default of `import brainevent` it must,
with command buffers switched off or the default turned off (BRAINEVENT_CUDA_GRAPHS=0) it
must not, and a kernel loaded with allow_cuda_graph=False never is. The parser of the dumps
is tested here on every machine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.kernels import CUDA_SCALE as SCALE
from tests.support.xla_dumps import custom_call_placement, hlo_placement, run_dumping, thunk_placement

# ------------------------------------------------------------------ the dump parser

THUNKS_CAPTURED = """\
000: kCommandBuffer\t
  001: kCustomCall   \t
  002: kKernel       \t
003: kCopy         \t
"""

THUNKS_IN_A_LOOP = """\
000: kKernel\t
001: kWhile \t
  condition:
  000: kKernel       \t
  body:
  000: kCommandBuffer\t
    001: kKernel    \t
    002: kCustomCall\t
  003: kCustomCall   \t
"""

THUNKS_PLAIN = """\
000: kCustomCall\t
001: kKernel    \t
"""

HLO_OUTLINED = """\
HloModule jit_captured_step, entry_computation_layout={(f32[1024]{0})->f32[1024]{0}}

%command_buffer (p: f32[1024]) -> f32[1024] {
  %p = f32[1024]{0} parameter(0)
  %custom-call.1 = f32[1024]{0} custom-call(f32[1024]{0} %p), custom_call_target="capture.scale"
  ROOT %loop_add_fusion = f32[1024]{0} fusion(f32[1024]{0} %custom-call.1), kind=kLoop
}

ENTRY %main.4 (x.1: f32[1024]) -> f32[1024] {
  %x.1 = f32[1024]{0} parameter(0)
  ROOT %call = f32[1024]{0} call(f32[1024]{0} %x.1), to_apply=%command_buffer
}
"""

HLO_PLAIN = """\
HloModule jit_captured_step

ENTRY main.4 {
  x.1 = f32[1024]{0} parameter(0)
  custom-call.1 = f32[1024]{0} custom-call(x.1), custom_call_target="capture.scale"
  ROOT fusion = f32[1024]{0} fusion(custom-call.1), kind=kLoop, calls=fused_add
}
"""


def test_thunk_dump_parser() -> None:
    assert thunk_placement(THUNKS_CAPTURED) == (1, 0)
    assert thunk_placement(THUNKS_IN_A_LOOP) == (1, 1)  # only the body's command buffer holds one
    assert thunk_placement(THUNKS_PLAIN) == (0, 1)
    assert thunk_placement("") == (0, 0)


def test_hlo_dump_parser() -> None:
    assert hlo_placement(HLO_OUTLINED) == (1, 0)
    assert hlo_placement(HLO_PLAIN) == (0, 1)


def test_placement_prefers_the_thunks_after_the_passes(tmp_path: Path) -> None:
    (tmp_path / "module_0001.jit_captured_step.thunk_sequence.txt").write_text(THUNKS_PLAIN)
    (tmp_path / "module_0001.jit_captured_step.sm_9.0_gpu_after_optimizations.txt").write_text(HLO_PLAIN)
    placement = custom_call_placement(tmp_path, "jit_captured_step")
    assert (placement.inside, placement.outside) == (0, 1)
    (tmp_path / "module_0001.jit_captured_step.thunk_sequence_after_thunk_passes.txt").write_text(
        THUNKS_CAPTURED
    )
    placement = custom_call_placement(tmp_path, "jit_captured_step")
    assert (placement.inside, placement.outside, placement.source) == (
        1,
        0,
        "module_0001.jit_captured_step.thunk_sequence_after_thunk_passes.txt",
    )
    with pytest.raises(AssertionError, match="no dump of jit_other"):
        custom_call_placement(tmp_path, "jit_other")


def test_placement_falls_back_to_the_outlined_hlo(tmp_path: Path) -> None:
    (tmp_path / "module_0002.jit_captured_step.thunk_sequence.txt").write_text("000: kCommandBuffer\t\n")
    (tmp_path / "module_0002.jit_captured_step.sm_9.0_gpu_after_optimizations.txt").write_text(HLO_OUTLINED)
    placement = custom_call_placement(tmp_path, "jit_captured_step")
    assert (placement.inside, placement.outside) == (1, 0)


CPU_SCRIPT = r'''
import brainevent, jax, jax.numpy as jnp, numpy as np
mod = brainevent.load_cpp_inline(name="capture_cpu_twice", cpp_sources="""
#include "brainevent/common.h"
// @BE twice arg ret
void twice(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = 2.0f * x.data_ptr<float>()[i];
}
""")
def captured_step(x):
    return mod.twice(x) + 1.0
x = jnp.arange(4, dtype=jnp.float32)
np.testing.assert_array_equal(np.asarray(jax.jit(captured_step)(x)), [1.0, 3.0, 5.0, 7.0])
print("ran")
'''


def test_a_real_dump_is_read(tmp_path: Path) -> None:
    # XLA's CPU backend has no command buffers: its dump names the module as the GPU's does,
    # and its optimised HLO shows the custom call on its own.
    assert "ran" in run_dumping(CPU_SCRIPT, [], tmp_path / "dump", "captured_step", platforms="cpu")
    placement = custom_call_placement(tmp_path / "dump", "jit_captured_step")
    assert (placement.inside, placement.outside) == (0, 1)
    assert placement.source.endswith("cpu_after_optimizations.txt"), placement


# ------------------------------------------------------------------------- on a GPU

# Compiles and runs `captured_step` (XLA module jit_captured_step): the custom call, then an
# add XLA fuses, so a captured region has a neighbour; the result is checked.
CAPTURE_SCRIPT = r"""
import json, os, sys
config = json.loads(sys.argv[1])
if config["opt_out"]:
    os.environ["BRAINEVENT_CUDA_GRAPHS"] = "0"
import brainevent
if config["enable_cuda_graphs"]:
    assert brainevent.enable_cuda_graphs()
import jax, jax.numpy as jnp, numpy as np

if config["kernel"] == "numba_cuda_kernel":
    from numba import cuda

    @cuda.jit
    def scale_kernel(x, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] * 2.0

    call = brainevent.numba_cuda_kernel(scale_kernel, outs=jax.ShapeDtypeStruct((1024,), jnp.float32),
                                        launch_dims=1024)
elif config["kernel"] == "cuda_kernel":
    call = brainevent.cuda_kernel(r'''
    extern "C" __global__ void scale(const float* x, float* out, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) out[i] = x[i] * 2.0f;
    }''', "scale", jax.ShapeDtypeStruct((1024,), jnp.float32), launch_dims=1024, n=1024)
else:
    mod = brainevent.load_cuda_inline(name="capture_scale", cuda_sources=config["source"],
                                      allow_cuda_graph=config["allow_cuda_graph"])
    call = lambda x: mod.scale(x, factor=2.0)

def captured_step(x):
    if config.get("steps"):  # the kernel as the body of a loop: each step doubles, then halves
        x = jax.lax.fori_loop(0, config["steps"], lambda i, v: call(v) * 0.5, x)
        return x + 1.0
    return call(x) + 1.0

x = jnp.arange(1024, dtype=jnp.float32)
out = jax.jit(captured_step)(x)
want = np.arange(1024) + 1.0 if config.get("steps") else np.arange(1024) * 2.0 + 1.0
np.testing.assert_array_equal(np.asarray(out), want)
print("ran")
"""

GRAPHS_OFF = "--xla_gpu_enable_command_buffer="  # no command buffers at all


def _placement(  # type: ignore[no-untyped-def]
    tmp_path: Path,
    *,
    kernel: str,
    graphs: bool,
    allow: bool = True,
    flags: str = "",
    opt_out: bool = False,
    steps: int = 0,
):
    config = {
        "steps": steps,
        "kernel": kernel,
        "enable_cuda_graphs": graphs,
        "allow_cuda_graph": allow,
        "source": SCALE,
        "opt_out": opt_out,
    }
    out = run_dumping(CAPTURE_SCRIPT, [json.dumps(config)], tmp_path / "dump", "captured_step", flags)
    assert "ran" in out
    return custom_call_placement(tmp_path / "dump", "jit_captured_step")


@pytest.mark.gpu
@pytest.mark.nvcc
def test_compiled_kernel_is_captured_with_cuda_graphs_enabled(tmp_path: Path) -> None:
    placement = _placement(tmp_path, kernel="load_cuda_inline", graphs=True)
    assert placement.inside == 1 and placement.outside == 0, placement


@pytest.mark.gpu
@pytest.mark.nvcc
def test_compiled_kernel_is_captured_by_default(tmp_path: Path) -> None:
    # No enable_cuda_graphs() and no user flags: `import brainevent` set them up.
    placement = _placement(tmp_path, kernel="load_cuda_inline", graphs=False)
    assert placement.inside == 1 and placement.outside == 0, placement


@pytest.mark.gpu
@pytest.mark.nvcc
@pytest.mark.parametrize(
    ("label", "flags", "opt_out"),
    [
        ("command buffers off", GRAPHS_OFF, False),
        ("JAX's default flags (BRAINEVENT_CUDA_GRAPHS=0)", "", True),
    ],
)
def test_compiled_kernel_is_not_captured_without_cuda_graphs(
    tmp_path: Path, label: str, flags: str, opt_out: bool
) -> None:
    placement = _placement(tmp_path, kernel="load_cuda_inline", graphs=False, flags=flags, opt_out=opt_out)
    assert placement.inside == 0 and placement.outside == 1, (label, placement)


@pytest.mark.gpu
@pytest.mark.nvcc
def test_allow_cuda_graph_false_is_never_captured(tmp_path: Path) -> None:
    placement = _placement(tmp_path, kernel="load_cuda_inline", graphs=True, allow=False)
    assert placement.inside == 0 and placement.outside == 1, placement


@pytest.mark.gpu
@pytest.mark.nvcc
def test_numba_cuda_kernel_is_captured_with_cuda_graphs_enabled(tmp_path: Path) -> None:
    pytest.importorskip("numba.cuda")
    placement = _placement(tmp_path, kernel="numba_cuda_kernel", graphs=True)
    assert placement.inside == 1 and placement.outside == 0, placement


@pytest.mark.gpu
def test_nvrtc_cuda_kernel_in_a_1000_step_loop_is_captured_by_default(tmp_path: Path) -> None:
    # No enable_cuda_graphs(): the default flags of `import brainevent` put the loop body's
    # launch in a command buffer.
    placement = _placement(tmp_path, kernel="cuda_kernel", graphs=False, steps=1000)
    assert placement.inside == 1 and placement.outside == 0, placement
