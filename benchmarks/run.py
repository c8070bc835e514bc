"""One entry point for every benchmark: CPU always, GPU when one is present.

Writes markdown tables (ratios against baselines measured in the same run, and whether each
target is met) to docs/benchmarks-cpu.md and, on a GPU machine, docs/benchmarks-gpu.md, then
redraws the charts of those pages (docs/img/benchmarks-*.png, charts.py; needs matplotlib,
from the bench extra). --charts-only redraws the charts from the tables as they are.

With --published-python PATH (or BRAINEVENT_BENCH_PUBLISHED_PYTHON=PATH), the CPU table also
compares with the published brainevent release installed in that interpreter's own virtualenv
(bench_published.py).

Usage: python benchmarks/run.py [--repeat N] [--no-write] [--published-python PATH] [--charts-only]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent / "docs"
sys.path.insert(0, str(HERE))


def _gpu_present() -> bool:
    sys.path.insert(0, str(HERE.parent / "src"))
    from brainevent.toolchain.cuda_driver import probe_devices

    probe = probe_devices()
    return bool(probe.available and probe.devices)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument(
        "--published-python",
        default=os.environ.get("BRAINEVENT_BENCH_PUBLISHED_PYTHON") or None,
        help="python of a separate venv with the published brainevent (adds comparison rows)",
    )
    parser.add_argument("--charts-only", action="store_true", help="only redraw the charts from the tables")
    args = parser.parse_args()
    if args.charts_only:
        return _charts(None)
    runs = [("bench_cpu.py", DOCS / "benchmarks-cpu.md")]
    if _gpu_present():
        runs.append(("bench_cuda.py", DOCS / "benchmarks-gpu.md"))
    status = 0
    for script, target in runs:
        command = [sys.executable, str(HERE / script), "--repeat", str(args.repeat)]
        if not args.no_write:
            command += ["--write", str(target)]
        if script == "bench_cpu.py" and args.published_python:
            command += ["--published-python", args.published_python]
        status |= subprocess.run(command, check=False).returncode
    if not args.no_write:
        status |= _charts([target for _, target in runs])
    return status


def _charts(pages: list[Path] | None) -> int:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("charts not redrawn: matplotlib is missing (pip install -e '.[bench]')", file=sys.stderr)
        return 1
    from charts import draw_all

    draw_all(pages)
    return 0


if __name__ == "__main__":
    sys.exit(main())
