"""Batch-partitionable kernels: ``jit`` with sharded inputs splits the call instead of gathering.

Runs on two host (CPU) devices in a subprocess, since the device count is fixed when JAX
starts; the same lowering is what a multi-GPU host compiles (tests/e2e/test_multigpu.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

SCRIPT = textwrap.dedent(
    r"""
    import json, sys
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    import brainevent

    # Each row is scaled and offset by the number of rows the kernel sees, so the result
    # shows whether the call ran on local shards (4 rows) or on the gathered array (8).
    mod = brainevent.load_cpp_inline(name="bp_rows", cpp_sources=r'''
    #include "brainevent/common.h"
    // @BE rows arg ret attr.scale:float32
    void rows(const BE::Tensor x, BE::Tensor out, float scale) {
      const float* px = x.data_ptr<float>();
      float* po = out.data_ptr<float>();
      for (int64_t i = 0; i < x.numel(); ++i) po[i] = px[i] * scale + static_cast<float>(x.size(0));
    }
    ''')
    num_batch_dims = None if sys.argv[1] == "none" else int(sys.argv[1])
    op = brainevent.XLACustomKernel("rows", num_batch_dims=num_batch_dims).def_kernel("cpu", mod.rows)
    mesh = Mesh(np.array(jax.devices()), ("b",))
    host = np.arange(32, dtype=np.float32).reshape(8, 4)
    x = jax.device_put(host, NamedSharding(mesh, P("b")))
    f = jax.jit(lambda x: op(x, outs=jax.ShapeDtypeStruct(x.shape, x.dtype), scale=2.0))
    hlo = f.lower(x).compile().as_text()
    y = f(x)
    print(json.dumps({
        "devices": len(jax.devices()),
        "all_gather": "all-gather" in hlo,
        "out_spec": [str(a) for a in y.sharding.spec],
        "rows_seen": float(np.asarray(y)[0, 0]),
        "ok": bool(np.allclose(np.asarray(y) - np.asarray(y)[0, 0], host * 2.0)),
    }))
    """
)


def run(num_batch_dims: str) -> dict[str, object]:
    env = dict(os.environ)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2").strip()
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, num_batch_dims], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_batch_partitionable_call_runs_on_local_shards() -> None:
    result = run("1")
    assert result["devices"] == 2
    assert result["all_gather"] is False
    assert result["out_spec"] == ["b"]
    assert result["rows_seen"] == 4.0  # each device saw its 4 of the 8 rows
    assert result["ok"] is True


def test_without_num_batch_dims_xla_gathers_the_input() -> None:
    # The control: the same kernel, not declared partitionable, is run on the whole array.
    result = run("none")
    assert result["all_gather"] is True
    assert result["rows_seen"] == 8.0
    assert result["ok"] is True


@pytest.mark.parametrize("value", ["0", "-1"])
def test_bad_num_batch_dims_is_refused_before_anything_runs(value: str) -> None:
    from brainevent import XLACustomKernel

    with pytest.raises(ValueError, match="num_batch_dims must be a positive int"):
        XLACustomKernel("rows", num_batch_dims=int(value))
