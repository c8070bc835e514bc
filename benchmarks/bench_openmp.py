"""OpenMP: the same softmax kernel built with and without ``openmp=True``, per call under jax.jit.

Each configuration runs in a process of its own, because the OpenMP runtime reads its
environment once, when it is loaded:
  1 thread         OMP_NUM_THREADS=1: the cost of OpenMP itself (target: within 1.5x of no OpenMP)
  default threads  as a user gets it (brainevent sets OMP_WAIT_POLICY=PASSIVE)
  active waiting   OMP_WAIT_POLICY=ACTIVE, the runtime's own default, for comparison
Within a process the variants take turns in every round (interleaved), and each figure is
the median over the rounds.

Usage: python benchmarks/bench_openmp.py [--rounds 7] [--calls 200]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine_line, precompile, run_python

SOFTMAX = r"""
#include "brainevent/common.h"
#include <cmath>
// @BE softmax arg ret
void softmax(const BE::Tensor x, BE::Tensor out) {
    const float* in = static_cast<const float*>(x.data_ptr());
    float* o = static_cast<float*>(out.data_ptr());
    const int64_t cols = x.size(x.ndim() - 1), rows = x.numel() / cols;
    #pragma omp parallel for
    for (int64_t r = 0; r < rows; ++r) {
        const float* a = in + r * cols;
        float* b = o + r * cols;
        float m = a[0];
        for (int64_t c = 1; c < cols; ++c) m = std::fmax(m, a[c]);
        float s = 0.0f;
        for (int64_t c = 0; c < cols; ++c) { b[c] = std::exp(a[c] - m); s += b[c]; }
        for (int64_t c = 0; c < cols; ++c) b[c] /= s;
    }
}
"""

SHAPES = ((2, 16, 512), (8, 256, 1024))

CHILD = r"""
import json, statistics, sys, time
import numpy as np, jax, jax.numpy as jnp
import brainevent

source, rounds, calls = open(sys.argv[1]).read(), int(sys.argv[2]), int(sys.argv[3])
plain = brainevent.load_cpp_inline("bench_softmax", source)
omp = brainevent.load_cpp_inline("bench_softmax_omp", source, openmp=True)
results = {}
for shape in json.loads(sys.argv[4]):
    x = jnp.asarray(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    fns = {"no OpenMP": jax.jit(plain.softmax), "OpenMP": jax.jit(omp.softmax)}
    expected = np.asarray(jax.nn.softmax(x, axis=-1))
    for fn in fns.values():
        np.testing.assert_allclose(np.asarray(fn(x)), expected, rtol=1e-5, atol=1e-7)
    samples = {label: [] for label in fns}
    for _ in range(rounds):
        for label, fn in fns.items():
            start = time.perf_counter()
            for _ in range(calls):
                y = fn(x)
            y.block_until_ready()
            samples[label].append((time.perf_counter() - start) / calls)
    results["x".join(map(str, shape))] = {k: statistics.median(v) for k, v in samples.items()}
print(json.dumps(results))
"""

CONFIGS = {
    "1 thread": {"OMP_NUM_THREADS": "1"},
    "default threads": {},
    "active waiting": {"OMP_WAIT_POLICY": "ACTIVE"},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    precompile()
    import os
    import tempfile

    for name in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):  # each config sets its own
        os.environ.pop(name, None)

    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "softmax.cpp"
        source.write_text(SOFTMAX)
        env_base = {"JAX_PLATFORMS": "cpu", "BRAINEVENT_CACHE_DIR": str(Path(tmp) / "cache")}
        run_python(CHILD, env_base, [str(source), "1", "1", json.dumps([[1, 8]])])  # build both
        print(f"# {machine_line()}")
        print(f"# per call under jax.jit, median of {args.rounds} interleaved rounds of {args.calls} calls")
        print(f"{'configuration':<17} {'shape':<12} {'no OpenMP':>11} {'OpenMP':>11} {'ratio':>7}")
        for config, env in CONFIGS.items():
            out = run_python(
                CHILD,
                {**env_base, **env},
                [str(source), str(args.rounds), str(args.calls), json.dumps(SHAPES)],
            )
            for shape, figures in json.loads(out.strip().splitlines()[-1]).items():
                plain, omp = figures["no OpenMP"], figures["OpenMP"]
                print(
                    f"{config:<17} {shape:<12} {plain * 1e3:>8.3f} ms {omp * 1e3:>8.3f} ms "
                    f"{omp / plain:>6.2f}x"
                )


if __name__ == "__main__":
    main()
