"""A program exported with a batch-dims call, replayed in a fresh process, still runs on each
device's shard (docs/transformations.md, ``jax.export``).

XLA splits such a call only for a target registered as batch partitionable. That registration
used to happen when a call was lowered, which a deserialized program never does: the replaying
process gathered the input and every device saw all 32 rows instead of its 8. Targets are now
registered with it when they are registered at all (the module's load). Four host devices, each
process started fresh, as the replay recipe is run. An operand whose batch dim is 1 (``w``) is
broadcast before the call, so the split call still gets a ``w`` of its rows' size.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
DEVICES = 4

SCRIPT = textwrap.dedent(
    r"""
    import json, sys
    from pathlib import Path
    import jax, numpy as np
    from jax import export
    from jax.sharding import NamedSharding, PartitionSpec as P
    import brainevent

    mode, where = sys.argv[1], Path(sys.argv[2])
    # Offsets every element by the number of rows the call sees: 8 on each of 4 devices when
    # the call is split, 32 when XLA gathered the input first.
    mod = brainevent.load_cpp_inline(name="export_rows", cpp_sources=r'''
    #include "brainevent/common.h"
    // @BE rows arg ret attr.scale:float32
    void rows(const BE::Tensor x, BE::Tensor out, float scale) {
      const float* px = x.data_ptr<float>();
      float* po = out.data_ptr<float>();
      for (int64_t i = 0; i < x.numel(); ++i) po[i] = px[i] * scale + static_cast<float>(x.size(0));
    }
    // The same plus w, which must have x's size (a batch dim of 1 is broadcast before the call).
    // @BE rows_plus arg arg ret attr.scale:float32
    void rows_plus(const BE::Tensor x, const BE::Tensor w, BE::Tensor out, float scale) {
      BE_CHECK(w.numel() == x.numel()) << "w has " << w.numel() << " elements, x " << x.numel();
      rows(x, out, scale);
      for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] += w.data_ptr<float>()[i];
    }
    ''')
    mesh = jax.make_mesh((len(jax.devices()),), ("b",))
    host = np.arange(32 * 4, dtype=np.float32).reshape(32, 4)
    x = jax.device_put(host, NamedSharding(mesh, P("b")))
    w = np.array([[0.5, -1.0, 2.0, 3.0]], np.float32)  # one row for every row of x

    def kinds():
        mod.rows.num_batch_dims = mod.rows_plus.num_batch_dims = 1
        op = brainevent.XLACustomKernel("export_rows_op", num_batch_dims=1).def_kernel("cpu", mod.rows)
        return {
            "module_function": (lambda v: mod.rows(v, scale=2.0), 0),
            "xla_custom_kernel": (lambda v: op(v, outs=jax.ShapeDtypeStruct(v.shape, v.dtype), scale=2.0), 0),
            "broadcast_operand": (lambda v: mod.rows_plus(v, w, scale=2.0), w),
        }

    def seen(y, plus):
        # Per device, the rows its call saw: the offset the kernel added to 2 x (+ w).
        per = {}
        for shard in y.addressable_shards:
            part = np.asarray(shard.data) - 2.0 * host[shard.index] - plus
            per[str(shard.device.id)] = sorted(set(part.ravel().tolist()))
        return per

    found = {"devices": len(jax.devices())}
    for name, (f, plus) in kinds().items():
        blob = where / f"{name}.bin"
        if mode == "export":
            jitted = jax.jit(f)
            exported = export.export(jitted, disabled_checks=brainevent.export_checks())(x)
            blob.write_bytes(exported.serialize())
            call = jitted
        else:  # a fresh process: the module is loaded (above), nothing of it traced or lowered
            call = jax.jit(export.deserialize(bytearray(blob.read_bytes())).call)
        found[name] = {
            "all_gather": "all-gather" in call.lower(x).compile().as_text(),
            "rows_seen": seen(call(x), plus),
        }
    print(json.dumps(found))
    """
)


def run(mode: str, where: Path) -> dict[str, Any]:
    env = dict(os.environ)
    env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={DEVICES}".strip()
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode, str(where)], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    where = tmp_path_factory.mktemp("export-replay")
    return {mode: run(mode, where) for mode in ("export", "replay")}


@pytest.mark.parametrize("kind", ["module_function", "xla_custom_kernel", "broadcast_operand"])
@pytest.mark.parametrize("mode", ["export", "replay"])
def test_each_device_sees_its_own_rows(runs: dict[str, dict[str, Any]], mode: str, kind: str) -> None:
    found = runs[mode]
    assert found["devices"] == DEVICES
    assert found[kind]["rows_seen"] == {str(d): [32 / DEVICES] for d in range(DEVICES)}, found[kind]
    assert found[kind]["all_gather"] is False
