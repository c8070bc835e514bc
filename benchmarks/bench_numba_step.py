"""The CPU `numba_kernel` loop step against the same add through `load_cpp_inline`.

One process, three variants of a jitted 1000-step `fori_loop` over 16 floats, timed in
alternating rounds (the order flips every round) so that the machine's load reaches them
alike:

  load_cpp_inline      the add as a C++ kernel (the baseline)
  numba_kernel         the add as a Numba @njit function, as numba_kernel calls it
  numba generic entry  the same registered Numba kernel called through the launcher
                       library's generic entry (the call-frame decoder every module uses):
                       the path numba_kernel took before it had a handler of its own

Per variant: the median and 10th/90th percentiles of the per-step time; per Numba variant:
the same of the per-round ratio to load_cpp_inline.

Usage: python benchmarks/bench_numba_step.py [--rounds 300]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ADD_KERNEL, SRC, add_numba, machine_line

sys.path.insert(0, str(SRC))


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[round(share * (len(ordered) - 1))]


def variants(n: int) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp
    import numba
    import numpy as np

    import brainevent
    from brainevent.calls.operands import signature_of
    from brainevent.launchers.numba_cpu import cpu_launcher_for
    from brainevent.numba_bridge.cpu_kernel import preparer

    brainevent.load_cpp_inline(name="bench_add", cpp_sources=ADD_KERNEL)
    x = jnp.ones(n, jnp.float32)
    out = jax.ShapeDtypeStruct(x.shape, x.dtype)
    add = numba.njit(add_numba)
    _, kernel_id = preparer(add)(signature_of((x, x), [out]))
    module = cpu_launcher_for(2, 1).target.split(".", 1)[0]  # "<module>.<handler>"
    generic = jax.ffi.ffi_call(f"{module}.call", out)  # the arity entry launchers.py writes
    return {
        "load_cpp_inline": lambda a, b: jax.ffi.ffi_call("bench_add.add", out)(a, b),
        "numba_kernel": brainevent.numba_kernel(add, outs=out),
        "numba generic entry": lambda a, b: generic(a, b, kernel_id=np.int64(kernel_id)),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--inner", type=int, default=5, help="loop runs timed together in one sample")
    args = parser.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import jax.numpy as jnp

    steps = 1000
    loops = {
        label: jax.jit(lambda a, b, f=f: jax.lax.fori_loop(0, steps, lambda i, v: f(v, b), a))
        for label, f in variants(16).items()
    }
    a = jnp.ones(16, jnp.float32)
    for loop in loops.values():
        loop(a, a).block_until_ready()
    labels = list(loops)
    per_step: dict[str, list[float]] = {label: [] for label in labels}
    ratios: dict[str, list[float]] = {label: [] for label in labels[1:]}
    for r in range(args.rounds):
        this_round = {}
        for label in labels if r % 2 == 0 else labels[::-1]:
            start = time.perf_counter()
            for _ in range(args.inner):
                loops[label](a, a).block_until_ready()
            this_round[label] = (time.perf_counter() - start) / args.inner / steps
            per_step[label].append(this_round[label])
        for label in ratios:
            ratios[label].append(this_round[label] / this_round[labels[0]])
    print(f"{machine_line()}, JAX {jax.__version__}; {args.rounds} alternating rounds of {args.inner} loops")
    for label, values in per_step.items():
        print(
            f"{label:>20}: {statistics.median(values) * 1e9:6.1f} ns/step "
            f"(p10 {percentile(values, 0.1) * 1e9:.1f}, p90 {percentile(values, 0.9) * 1e9:.1f})"
        )
    for label, values in ratios.items():
        print(
            f"{label:>20}: {statistics.median(values):.3f}x load_cpp_inline per step "
            f"(p10 {percentile(values, 0.1):.3f}, p90 {percentile(values, 0.9):.3f})"
        )


if __name__ == "__main__":
    main()
