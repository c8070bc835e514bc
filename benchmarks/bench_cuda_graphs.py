"""CUDA graphs by default: what `import brainevent` changes, on a micro loop and a model-like step.

Every measurement runs in a fresh process (XLA reads XLA_FLAGS once, when JAX starts its
backend), in three configurations taken in turns, round after round, so a change in the
machine's load reaches all of them alike:
  off       BRAINEVENT_CUDA_GRAPHS=0 and no XLA_FLAGS: JAX's own defaults
  default   no XLA_FLAGS: what `import brainevent` sets up
  explicit  BRAINEVENT_CUDA_GRAPHS=0 and the command-buffer flags written out by hand
Workloads:
  (a) a 1000-step fori_loop of the seeds' vector_add (load_cuda_inline): per step
  (b) a model-like jitted step (a chain of matmul/tanh/elementwise fusions with a few
      vector_add custom calls): per call, per step of a 100-step fori_loop over it, the first
      call (compile and graph capture) and the device's peak memory
On a machine without a GPU the GPU parts are skipped (said so) and the same children run on
the CPU once, so the script itself stays tested.

Usage: python benchmarks/bench_cuda_graphs.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
EXPLICIT = "--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL --xla_gpu_graph_min_graph_size=1"
CONFIGS = {
    "off": ({"BRAINEVENT_CUDA_GRAPHS": "0"}, None),
    "default": ({}, None),
    "explicit": ({"BRAINEVENT_CUDA_GRAPHS": "0"}, EXPLICIT),
}

VECTOR_ADD = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"

__global__ void add_kernel(const float* a, const float* b, float* out, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) out[idx] = a[idx] + b[idx];
}

// @BE vector_add arg arg ret stream
void vector_add(const BE::Tensor a, const BE::Tensor b, BE::Tensor out, int64_t stream) {
    int n = a.numel();
    add_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        static_cast<const float*>(a.data_ptr()), static_cast<const float*>(b.data_ptr()),
        static_cast<float*>(out.data_ptr()), n);
    BE_CHECK_KERNEL_LAUNCH();
}
"""

# One child: builds (or hits the cache for) vector_add, runs both workloads, prints JSON.
# On the CPU, jnp's add stands in for the CUDA kernel.
CHILD = r"""
import json, sys, time, statistics
import brainevent
import jax, jax.numpy as jnp
reps = int(sys.argv[2])
gpu = jax.default_backend() == "gpu"
if gpu:
    mod = brainevent.load_cuda_inline(name="bench_graphs_vadd", cuda_sources=sys.argv[1])
    vadd = mod.vector_add
else:
    vadd = lambda a, b: a + b
from brainevent.cuda_graphs import capture_status

def timed(fn, *args, per=1):
    fn(*args).block_until_ready()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        fn(*args).block_until_ready()
        samples.append((time.perf_counter() - start) / per)
    return statistics.median(samples)

x = jnp.ones(1024, jnp.float32)
y = jnp.ones(1024, jnp.float32)
loop = jax.jit(lambda a, b: jax.lax.fori_loop(0, 1000, lambda i, v: vadd(v, b), a))
loop_step = timed(loop, x, y, per=1000)

keys = jax.random.split(jax.random.PRNGKey(0), 12)
weights = [jax.random.normal(k, (256, 256), jnp.float32) * 0.05 for k in keys]
h0 = jax.random.normal(jax.random.PRNGKey(1), (64, 256), jnp.float32)
bias = jnp.full((64, 256), 0.01, jnp.float32)

def model(h):
    for i, w in enumerate(weights):
        h = jnp.tanh(h @ w) * 0.9 + 0.1 * h
        h = h - jnp.mean(h, axis=-1, keepdims=True)
        if i % 4 == 3:  # a few custom calls among the fusions
            h = vadd(h, bias)
    return h

start = time.perf_counter()
step = jax.jit(model)
step(h0).block_until_ready()
first = time.perf_counter() - start
per_call = timed(step, h0)
looped = jax.jit(lambda h: jax.lax.fori_loop(0, 100, lambda i, v: model(v), h))
model_step = timed(looped, h0, per=100)
stats = jax.devices()[0].memory_stats() or {}
print(json.dumps({
    "gpu": gpu, "loop_step": loop_step, "model_call": per_call, "model_step": model_step,
    "model_first": first, "peak_bytes": stats.get("peak_bytes_in_use"), "status": capture_status()[1],
}))
"""


def run_child(config: str, cache: str, reps: int, platform: str | None) -> dict[str, object]:
    extra, flags = CONFIGS[config]
    env = dict(os.environ, PYTHONPATH=str(SRC), BRAINEVENT_CACHE_DIR=cache, **extra)
    env.pop("XLA_FLAGS", None)
    if "BRAINEVENT_CUDA_GRAPHS" not in extra:
        env.pop("BRAINEVENT_CUDA_GRAPHS", None)
    if flags is not None:
        env["XLA_FLAGS"] = flags
    env.pop("JAX_PLATFORMS", None)
    if platform is not None:
        env["JAX_PLATFORMS"] = platform
    done = subprocess.run(
        [sys.executable, "-c", CHILD, VECTOR_ADD, str(reps)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the {config} child failed:\n{done.stderr[-4000:]}")
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def has_gpu() -> bool:
    probe = "import jax; print(jax.default_backend())"
    env = dict(os.environ, PYTHONPATH=str(SRC))
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=300)
    return done.returncode == 0 and done.stdout.strip().endswith("gpu")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    gpu = has_gpu()
    cache = tempfile.mkdtemp(prefix="bench_graphs_")
    if not gpu:
        print("no GPU: skipped the GPU parts; one CPU round checks the script (flags do nothing on the CPU)")
    rounds, reps, platform = (args.rounds, args.reps, None) if gpu else (1, 3, "cpu")
    samples: dict[str, list[dict[str, object]]] = {c: [] for c in CONFIGS}
    for _ in range(rounds):
        for config in CONFIGS:
            samples[config].append(run_child(config, cache, reps, platform))

    def med(config: str, key: str) -> float:
        values = [float(s[key]) for s in samples[config] if s.get(key) is not None]  # type: ignore[arg-type]
        return statistics.median(values) if values else float("nan")

    device = "GPU" if gpu else "CPU (smoke run)"
    print(f"\n{device}, {rounds} interleaved round(s) of fresh processes, medians")
    columns = ("loop step", "model call", "model step", "first call", "peak MiB")
    print(f"{'config':<9} " + " ".join(f"{c:>11}" for c in columns))
    for config in CONFIGS:
        peak = med(config, "peak_bytes") / 2**20
        print(
            f"{config:<9} {med(config, 'loop_step') * 1e6:9.2f}us {med(config, 'model_call') * 1e6:10.1f}us "
            f"{med(config, 'model_step') * 1e6:10.1f}us {med(config, 'model_first') * 1e3:9.0f}ms {peak:9.1f}"
        )
    for key, label in (
        ("loop_step", "loop step"),
        ("model_call", "model call"),
        ("model_step", "model step"),
    ):
        print(
            f"{label}: default / explicit = {med('default', key) / med('explicit', key):.3f}x, "
            f"default / off = {med('default', key) / med('off', key):.3f}x"
        )
    print("capture status in the default child:", samples["default"][0]["status"])


if __name__ == "__main__":
    main()
