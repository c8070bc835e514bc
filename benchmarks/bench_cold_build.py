"""Cold builds against one compiler call, in interleaved rounds (a change in the machine's load
reaches every variant of a round alike); medians and ratios from the same run.

  cpp cold         load_cpp_inline of a module never built, the shared decoder cached
  cpp first-ever   the same in an empty cache: the shared decoder is compiled too
  g++ -c           the user's source alone (same -O3)
  cuda cold        load_cuda_inline of the seeds' vector_add, decoder cached (compile only)
  cuda first-ever  the same in an empty cache
  nvcc one TU      one nvcc call on the kernel + a hand-written ffi.h handler, linked (-shared)

Without a GPU set BRAINEVENT_CUDA_ARCH (e.g. sm_90) for both sides.
Targets: cuda cold <= 0.35x of nvcc one TU on a 2-core machine (<= 0.25x on the GPU host);
cpp cold within 0.2 s of g++ -c. Usage: python benchmarks/bench_cold_build.py [--rounds 5] [--no-cuda]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cuda import HAND_WRITTEN, SEED_ADD
from common import ADD_KERNEL, SRC, machine_line

sys.path.insert(0, str(SRC))

_round = itertools.count()


def _unique(source: str) -> str:
    """A source never built before (a comment differs), so the module's key is new."""
    return source + f"\n// cold build {next(_round)} {time.time_ns()}\n"


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _cold_load(load: Callable[[str], Any], cache: str | None) -> None:
    """A load that must build: into ``cache``, or into an empty cache (None) made for it."""
    with tempfile.TemporaryDirectory() as fresh:
        assert load(cache or fresh).built_now


def cpp_variants(persistent: str) -> dict[str, Callable[[], object]]:
    import brainevent

    def ours(cache: str | None) -> None:
        _cold_load(
            lambda directory: brainevent.load_cpp_inline(
                name="cold_add",
                cpp_sources=_unique(ADD_KERNEL),
                build_directory=directory,
                auto_register=False,
            ),
            cache,
        )

    def gxx() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "user.cpp"
            src.write_text(ADD_KERNEL)
            command = ["g++", "-std=c++17", "-O3", "-fPIC", "-I", brainevent.include_dir()]
            subprocess.run([*command, "-c", str(src), "-o", str(Path(tmp) / "user.o")], check=True)

    return {"cpp cold": lambda: ours(persistent), "cpp first-ever": lambda: ours(None), "g++ -c": gxx}


def cuda_variants(persistent: str) -> dict[str, Callable[[], object]]:
    import brainevent
    from brainevent.headers import xla_include_dir
    from brainevent.toolchain.cuda_arch import gencode_flags, resolve_archs
    from brainevent.toolchain.nvcc import find_nvcc

    nvcc = find_nvcc()
    flags = gencode_flags(resolve_archs(None))

    def ours(cache: str | None) -> None:
        _cold_load(
            lambda directory: brainevent.load_cuda_inline(
                name="cold_vadd",
                cuda_sources=_unique(SEED_ADD),
                build_directory=directory,
                auto_register=False,
            ),
            cache,
        )

    def one_tu() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "hand.cu"
            src.write_text(HAND_WRITTEN)
            command = [nvcc.path, "-std=c++17", "-O3", "-shared", "-Xcompiler=-fPIC", *flags]
            command += ["-isystem", str(xla_include_dir()), str(src), "-o", str(Path(tmp) / "libhand.so")]
            subprocess.run(command, check=True)

    return {
        "cuda cold": lambda: ours(persistent),
        "cuda first-ever": lambda: ours(None),
        "nvcc one TU": one_tu,
    }


def run_rounds(variants: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
    for fn in variants.values():  # warm the toolchain memos, the OS file cache, the decoder
        fn()
    samples: dict[str, list[float]] = {label: [] for label in variants}
    order = list(variants)
    for r in range(rounds):
        for label in order if r % 2 == 0 else reversed(order):  # alternate who goes first
            samples[label].append(_timed(variants[label]))
    return samples


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} s (min {min(values):.3f}, max {max(values):.3f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-cuda", action="store_true")
    args = parser.parse_args()
    print(machine_line())
    with tempfile.TemporaryDirectory() as persistent:
        variants = cpp_variants(persistent)
        if not args.no_cuda:
            variants.update(cuda_variants(persistent))
        samples = run_rounds(variants, args.rounds)
    for label, values in samples.items():
        print(f"{label:16s} {spread(values)}")
    cold, gxx = samples["cpp cold"], samples["g++ -c"]
    diffs = [a - b for a, b in zip(cold, gxx, strict=True)]
    print(f"cpp cold - g++ -c, per round: median {statistics.median(diffs):+.3f} s (target <= +0.2 s)")
    first = [a - b for a, b in zip(samples["cpp first-ever"], gxx, strict=True)]
    print(
        f"cpp first-ever - g++ -c, per round: median {statistics.median(first):+.3f} s (decoder compiled too)"
    )
    if not args.no_cuda:
        one = samples["nvcc one TU"]
        for label, target in (
            ("cuda cold", "<= 0.35x here, <= 0.25x on the GPU host"),
            ("cuda first-ever", ""),
        ):
            ratios = [a / b for a, b in zip(samples[label], one, strict=True)]
            note = f" (target {target})" if target else " (reported apart: builds the shared decoder too)"
            print(
                f"{label} / nvcc one TU, per round: median {statistics.median(ratios):.3f}x "
                f"(min {min(ratios):.3f}, max {max(ratios):.3f}){note}"
            )


if __name__ == "__main__":
    main()
