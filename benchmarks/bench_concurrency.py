"""Concurrency: N processes cold-load the same module at once (one builds, the rest wait)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import SRC

KERNEL = r"""
#include "brainevent/common.h"
// @BE twice arg ret
void twice(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = 2.0f * x.data_ptr<float>()[i];
}
"""

LOADER = r"""
import json, sys
import brainevent
mod = brainevent.load_cpp_inline(name="bench_conc", cpp_sources=sys.argv[1], auto_register=False)
print(json.dumps({"built_now": mod.built_now}))
"""


def wall_time(processes: int, warm: bool = False) -> tuple[float, int]:
    """(seconds for `processes` concurrent loads of one module, how many of them built).

    Cold by default (an empty cache); with ``warm`` the module is built first, untimed, so the
    figure is the start-up and cache-hit cost of that many interpreters sharing these CPUs.
    """
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, BRAINEVENT_CACHE_DIR=cache, PYTHONPATH=str(SRC))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if warm:
            subprocess.run([sys.executable, "-c", LOADER, KERNEL], env=env, check=True, capture_output=True)
        started = time.monotonic()
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", LOADER, KERNEL], env=env, stdout=subprocess.PIPE, text=True
            )
            for _ in range(processes)
        ]
        outs = [p.communicate(timeout=600)[0] for p in procs]
        elapsed = time.monotonic() - started
        if any(p.returncode != 0 for p in procs):
            raise RuntimeError("a concurrent loader failed")
        built = sum(json.loads(o.strip().splitlines()[-1])["built_now"] for o in outs)
        return elapsed, built
