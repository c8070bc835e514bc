"""What `import brainevent`'s CUDA-graph default costs programs that are not ours.

XLA reads XLA_FLAGS once, when JAX starts its backend, so every configuration runs in a
fresh process; configurations take turns round after round (interleaved), so a change in
the machine's load reaches all of them alike. Each child runs the whole suite and prints
one JSON line of per-step times (the best of 15 batches); the parent prints medians over
rounds and ratios against the `jax` configuration (JAX alone, brainevent never imported)
measured in the same run.

Programs without a custom call (written here, not ours): an MLP training step (jit of grad
and update), a bf16 attention block, a transformer-style layer (layernorm, MLP, residual),
a 200-step scan of an RNN cell, a while_loop with a cond in its body, a 1000-step
fori_loop of small element-wise ops, and a dispatch-bound run of many small jitted
functions. Program with our kernel: a 1000-step fori_loop of a vector add compiled by
brainevent.cuda_kernel (NVRTC), against the same loop under explicit command-buffer flags.

Configurations (--configs picks some): jax (JAX alone), brainevent (`import brainevent`
first, whatever its default is), explicit (the command-buffer flags written out), and
flag candidates `min2`, `min3` (JAX plus --xla_gpu_graph_min_graph_size=N) for choosing
a default.

On a machine without a GPU the children run once on the CPU so the script stays tested.

Usage: python benchmarks/bench_graph_default.py [--rounds 5] [--configs jax,brainevent,explicit]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cuda_graphs import has_gpu

SRC = Path(__file__).resolve().parents[1] / "src"
EXPLICIT_FLAGS = "--xla_gpu_enable_command_buffer=+CUSTOM_CALL --xla_gpu_graph_min_graph_size=1"
# name -> (import brainevent in the child?, XLA_FLAGS or None)
CONFIGS: dict[str, tuple[bool, str | None]] = {
    "jax": (False, None),
    "brainevent": (True, None),
    "explicit": (False, EXPLICIT_FLAGS),
    "min2": (False, "--xla_gpu_graph_min_graph_size=2"),
    "min3": (False, "--xla_gpu_graph_min_graph_size=3"),
}
OURS = ("kernel_loop",)

CHILD = r"""
import json, statistics, sys, time
if sys.argv[1] == "1":
    import brainevent
import jax, jax.numpy as jnp
from jax import lax
gpu = jax.default_backend() == "gpu"
scale = 1 if gpu else 4  # fewer repetitions on the CPU smoke run

def per_step(fn, args, steps=1, calls=20, batches=15):
    out = fn(*args); jax.block_until_ready(out)
    samples = []
    for _ in range(max(3, batches // scale)):
        start = time.perf_counter()
        for _ in range(max(1, calls // scale)):
            out = fn(*args)
        jax.block_until_ready(out)
        samples.append((time.perf_counter() - start) / (max(1, calls // scale) * steps))
    return min(samples)  # the steady state: a batch that met a host hiccup says nothing of the flags

key = jax.random.PRNGKey(0)
ks = jax.random.split(key, 16)
results = {}

# MLP training step
sizes = [512, 1024, 1024, 10]
shapes = list(zip(sizes, sizes[1:]))
params = [(jax.random.normal(ks[i], (a, b)) * 0.02, jnp.zeros(b)) for i, (a, b) in enumerate(shapes)]
xb = jax.random.normal(ks[4], (256, 512)); yb = jax.random.randint(ks[5], (256,), 0, 10)
def loss(p, x, y):
    h = x
    for w, b in p[:-1]:
        h = jax.nn.relu(h @ w + b)
    logits = h @ p[-1][0] + p[-1][1]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))
@jax.jit
def train_step(p, x, y):
    g = jax.grad(loss)(p, x, y)
    return jax.tree.map(lambda a, b: a - 1e-3 * b, p, g)
results["mlp_train_step"] = per_step(train_step, (params, xb, yb))

# bf16 attention
q, k, v = (jax.random.normal(ks[6 + i], (8, 16, 512, 64), jnp.bfloat16) for i in range(3))
@jax.jit
def attention(q, k, v):
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / 8.0
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s.astype(jnp.float32), -1).astype(q.dtype), v)
results["attention_bf16"] = per_step(attention, (q, k, v))

# transformer-style layer
d = 512
wl = [jax.random.normal(ks[9 + i], s) * 0.02 for i, s in enumerate([(d, 4 * d), (4 * d, d)])]
xt = jax.random.normal(ks[11], (8, 128, d))
@jax.jit
def layer(x, w1, w2):
    h = (x - x.mean(-1, keepdims=True)) * lax.rsqrt(x.var(-1, keepdims=True) + 1e-5)
    return x + jax.nn.gelu(h @ w1) @ w2
results["transformer_layer"] = per_step(layer, (xt, *wl))

# 200-step scan of an RNN cell
wr = jax.random.normal(ks[12], (256, 256)) * 0.05
xs = jax.random.normal(ks[13], (200, 32, 256))
@jax.jit
def rnn(h, xs):
    return lax.scan(lambda h, x: (jnp.tanh(h @ wr + x), None), h, xs)[0]
results["scan_rnn"] = per_step(rnn, (jnp.zeros((32, 256)), xs), steps=200)

# while_loop with a cond in its body
@jax.jit
def while_cond(x):
    def body(c):
        i, x = c
        x = lax.cond(i % 2 == 0, lambda x: x * 0.99 + 0.01, lambda x: jnp.sin(x), x)
        return i + 1, x
    return lax.while_loop(lambda c: c[0] < 1000, body, (0, x))[1]
results["while_cond"] = per_step(while_cond, (jnp.ones(4096),), steps=1000, calls=3)

# 1000-step fori_loop of small element-wise ops
@jax.jit
def fori_small(x):
    return lax.fori_loop(0, 1000, lambda i, x: jnp.tanh(x) * 0.5 + x * 0.25, x)
results["fori_small_ops"] = per_step(fori_small, (jnp.ones(4096),), steps=1000, calls=3)

# many small jitted functions, dispatch-bound
fns = [jax.jit(lambda x, c=c: x * c + 1.0) for c in range(20)]
def many(x):
    for f in fns:
        x = f(x)
    return x
results["many_small_jits"] = per_step(many, (jnp.ones(256),), steps=20)

# ours: a 1000-step fori_loop of an NVRTC vector add
if gpu:
    import brainevent
    add = brainevent.cuda_kernel(
        'extern "C" __global__ void add(const float* x, const float* y, float* o, int n)'
        "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) o[i] = x[i] + y[i]; }",
        "add", jax.ShapeDtypeStruct((1024,), jnp.float32),
        launch_dims=lambda x, y: x.size, n=lambda x, y: x.size)
    loop = jax.jit(lambda a, b: lax.fori_loop(0, 1000, lambda i, v: add(v, b), a))
    results["kernel_loop"] = per_step(loop, (jnp.ones(1024), jnp.ones(1024)), steps=1000, calls=3)
print(json.dumps({"gpu": gpu, "times": results}))
"""


def run_child(config: str, cache: str, platform: str | None) -> dict[str, object]:
    import_brainevent, flags = CONFIGS[config]
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("XLA_FLAGS", "BRAINEVENT_CUDA_GRAPHS", "JAX_PLATFORMS")
    }
    env.update(PYTHONPATH=str(SRC), BRAINEVENT_CACHE_DIR=cache)
    if flags is not None:
        env["XLA_FLAGS"] = flags
    if platform is not None:
        env["JAX_PLATFORMS"] = platform
    done = subprocess.run(
        [sys.executable, "-c", CHILD, "1" if import_brainevent else "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the {config} child failed:\n{done.stderr[-4000:]}")
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--configs", default="jax,brainevent,explicit")
    args = parser.parse_args()
    configs = args.configs.split(",")
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown or "jax" not in configs:
        parser.error(f"--configs must include jax and name only {sorted(CONFIGS)}; got {args.configs!r}")
    gpu = has_gpu()
    if not gpu:
        print("no GPU: one CPU round checks the script (XLA's GPU flags do nothing on the CPU)")
    rounds, platform = (args.rounds, None) if gpu else (1, "cpu")
    cache = tempfile.mkdtemp(prefix="bench_graph_default_")
    samples: dict[str, list[dict[str, float]]] = {c: [] for c in configs}
    for _ in range(rounds):
        for config in configs:
            samples[config].append(run_child(config, cache, platform)["times"])  # type: ignore[arg-type]

    def med(config: str, program: str) -> float:
        return statistics.median(s[program] for s in samples[config])

    programs = list(samples["jax"][0])
    print(
        f"\n{'GPU' if gpu else 'CPU (smoke run)'}, {rounds} interleaved round(s) of fresh processes, medians"
    )
    print(
        f"{'program':<18} "
        + " ".join(f"{c:>11}" for c in configs)
        + "  "
        + " ".join(f"{c + '/jax':>15}" for c in configs if c != "jax")
    )
    for program in programs:
        base = "explicit" if program in OURS and "explicit" in configs else "jax"
        times = " ".join(f"{med(c, program) * 1e6:9.2f}us" for c in configs)
        ratios = " ".join(f"{med(c, program) / med('jax', program):15.3f}" for c in configs if c != "jax")
        print(f"{program:<18} {times}  {ratios}")
        if program in OURS and base == "explicit" and "brainevent" in configs:
            print(
                f"{'':<18} brainevent/explicit = {med('brainevent', program) / med('explicit', program):.3f}"
            )
    if "brainevent" in configs:
        worst = max((med("brainevent", p) / med("jax", p), p) for p in programs if p not in OURS)
        print(f"slowest program without a custom call after import brainevent: {worst[1]} at {worst[0]:.3f}x")


if __name__ == "__main__":
    main()
