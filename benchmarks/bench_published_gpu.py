"""numba_cuda_kernel of the published release (brainevent 0.2.1) against this checkout's, on a GPU.

Each side runs the seed's add kernel (Option 1: grid=4, block=256, 1024 floats) in its own
process: this checkout with ``PYTHONPATH=src``, the release with the interpreter of a
virtualenv where it is installed (the import names clash). Each process reports whether the
first call worked and matched NumPy, and its per-call and per-``fori_loop``-step times.

    python benchmarks/bench_published_gpu.py --published-python /path/to/venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

PROBE = r"""
import json, statistics, time, traceback
import jax, jax.numpy as jnp, numpy as np
from numba import cuda
import brainevent

@cuda.jit
def add_kernel(x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] + y[i]

result = {"version": getattr(brainevent, "__version__", "?"), "where": brainevent.__file__}
try:
    fn = brainevent.numba_cuda_kernel(
        add_kernel, outs=jax.ShapeDtypeStruct((1024,), jnp.float32), grid=4, block=256)
    a = jnp.arange(1024, dtype=jnp.float32); b = jnp.ones(1024, jnp.float32)
    one = jax.jit(lambda x, y: fn(x, y))
    result["ok"] = bool(np.array_equal(np.asarray(one(a, b)), np.arange(1024) + 1.0))
    def med(f, k=7):
        s = []
        for _ in range(k):
            t = time.perf_counter(); f(); s.append(time.perf_counter() - t)
        return statistics.median(s)
    result["call"] = med(lambda: [one(a, b) for _ in range(2000)][-1].block_until_ready()) / 2000
    loop = jax.jit(lambda x, y: jax.lax.fori_loop(0, 1000, lambda i, v: fn(v, y), x))
    loop(a, b).block_until_ready()
    result["step"] = med(lambda: loop(a, b).block_until_ready()) / 1000
except Exception as exc:
    result["ok"] = False
    result["error"] = f"{type(exc).__name__}: {exc}"[:600]
    result["trace"] = traceback.format_exc()[-1500:]
print("RESULT " + json.dumps(result))
"""


def run(python: str, ours: bool) -> dict[str, object]:
    env = dict(os.environ)
    if ours:
        env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    else:
        env.pop("PYTHONPATH", None)
    done = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, env=env, timeout=600)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    return {"ok": False, "error": f"exit {done.returncode}: {done.stderr[-1500:]}"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--published-python", required=True)
    args = parser.parse_args()
    ours = run(sys.executable, ours=True)
    published = run(args.published_python, ours=False)
    print(json.dumps({"ours": ours, "published": published}, indent=1))

    def cell(r: dict[str, object]) -> str:
        if not r.get("ok"):
            return f"fails: {str(r.get('error', '?')).splitlines()[0][:200]}"
        return f"{float(r['call']) * 1e6:.2f} us / {float(r['step']) * 1e6:.2f} us"  # type: ignore[arg-type]

    print("| numba_cuda_kernel, seed Option 1 (per call / per loop step) | this checkout | 0.2.1 |")
    print("|---|---|---|")
    print(f"| result | {cell(ours)} | {cell(published)} |")


if __name__ == "__main__":
    main()
