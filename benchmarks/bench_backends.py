"""One primitive timed across its GPU backends: the table of docs/backends-example.md.

Runs the page's first two code blocks (the primitive ``axpy``, its five backends and its rules)
from a module file, adds plain ``jax.numpy`` as a reference backend, then measures:

- per call under ``jax.jit``: ``XLACustomKernel.benchmark`` (interleaved rounds; median and
  noise, 1.4826 x MAD) at n = 4096, 2^20 and 2^24;
- per step of a 1000-step ``jax.lax.fori_loop`` whose body is one call on 4096 elements:
  one jitted loop per backend, timed in interleaved rounds.

Prints brainevent's table and a markdown table; ``--write PAGE`` puts the markdown table
between the page's ``backends-table`` markers.

Usage: python benchmarks/bench_backends.py [--rounds 30] [--write docs/backends-example.md]
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "backends-example.md"
SIZES = (1 << 12, 1 << 20, 1 << 24)
LOOP_N, STEPS = 4096, 1000
BEGIN, END = "<!-- backends-table:begin -->", "<!-- backends-table:end -->"

sys.path.insert(0, str(ROOT / "src"))


def page_blocks(text: str) -> list[str]:
    """The ```python blocks of a page, as tests/docs/test_docs_examples.py runs them."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            skip = i > 0 and lines[i - 1].strip() == "<!-- not-run -->"
            body = []
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            if not skip:
                blocks.append("\n".join(body))
        i += 1
    return blocks


def load_primitive(directory: Path) -> Any:
    """The page's primitive, built by its first two blocks (Warp and Triton need a source file)."""
    path = directory / "backends_example.py"
    path.write_text("\n\n".join(page_blocks(PAGE.read_text())[:2]))
    spec = importlib.util.spec_from_file_location("backends_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["backends_example"] = module
    spec.loader.exec_module(module)
    return module.axpy


def loop_steps(op: Any, backends: list[str], rounds: int) -> dict[str, dict[str, float]]:
    """Per-step statistics (us) of a STEPS-step fori_loop per backend, in interleaved rounds."""
    import functools

    import jax
    import jax.numpy as jnp

    from brainevent.custom_kernel.benchmark import summarize, time_interleaved

    ones = jnp.ones(LOOP_N, jnp.float32)
    start = jnp.zeros(LOOP_N, jnp.float32)
    runners: dict[str, Any] = {}
    for backend in backends:

        def body(_: Any, v: Any, backend: str = backend) -> Any:
            return op(0.5 * v, ones, backend=backend)

        loop = jax.jit(lambda u, body=body: jax.lax.fori_loop(0, STEPS, body, u))
        jax.block_until_ready(loop(start))  # compile
        for _ in range(3):
            jax.block_until_ready(loop(start))
        runners[backend] = functools.partial(loop, start)
    times = time_interleaved(runners, rounds, 1)
    # summarize() turns seconds into ms; given ms per step, its "_ms" figures are us per step.
    return {b: summarize([t / STEPS * 1e3 for t in ts]) for b, ts in times.items()}


def cell(median: float, noise: float) -> str:
    return f"{median:.2f} ± {noise:.2f}"


def markdown(result: Any, loops: dict[str, dict[str, float]], backends: list[str]) -> str:
    header = [f"per call, n={'4096' if n == 4096 else f'2^{n.bit_length() - 1}'} (us)" for n in SIZES]
    lines = [
        f"| backend | {' | '.join(header)} | fori_loop step, n={LOOP_N} (us) |",
        "|---|" + "---|" * (len(SIZES) + 1),
    ]
    by = {(r.backend, r.label): r for r in result.records}
    for backend in backends:
        cells = []
        for n in SIZES:
            r = by.get((backend, f"n={n}"))
            cells.append(
                cell(r.median_ms * 1e3, r.noise_ms * 1e3) if r is not None and r.success else "failed"
            )
        stats = loops.get(backend)
        cells.append(cell(stats["median_ms"], stats["noise_ms"]) if stats else "failed")
        name = "jnp (reference)" if backend == "jnp" else backend
        lines.append(f"| {name} | {' | '.join(cells)} |")
    return "\n".join(lines)


def machine() -> str:
    import jax

    versions = []
    for package in ("jax", "jaxlib", "triton", "warp-lang", "numba-cuda"):
        try:
            versions.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{package} absent")
    return f"{jax.devices('gpu')[0].device_kind}; {', '.join(versions)}"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--write", type=Path, help="page whose backends-table block to replace")
    args = parser.parse_args()

    import numpy as np

    import brainevent

    with tempfile.TemporaryDirectory() as tmp:
        op = load_primitive(Path(tmp))
        op.def_kernel("jnp", "gpu", lambda outs: lambda x, y: (2.0 * x + y,))
        backends = op.available_backends("gpu")
        configs = [
            brainevent.BenchmarkConfig(f"n={n}", (np.ones(n, np.float32), np.ones(n, np.float32)))
            for n in SIZES
        ]
        result = op.benchmark(platform="gpu", configs=configs, n_warmup=5, n_runs=args.rounds)
        loops = loop_steps(op, backends, args.rounds)
    print(machine())
    print(result.table())
    table = markdown(result, loops, backends)
    print(table)
    if args.write is not None:
        text = args.write.read_text()
        pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
        if not pattern.search(text):
            print(f"{args.write} has no {BEGIN} ... {END} block", file=sys.stderr)
            return 1
        # A blank line after the table: text right after one would render as a row.
        args.write.write_text(pattern.sub(lambda _: f"{BEGIN}\n{table}\n\n{END}", text))
        print(f"table written to {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
