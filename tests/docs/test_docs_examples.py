"""The documentation's Python examples run, page by page, as a user would paste them.

Each page's ```python blocks run in order in one fresh interpreter (so later blocks see
earlier ones), from a script file (Warp and Triton read their kernels' source). A block
preceded by `<!-- not-run -->` is illustrative only. A page with any GPU block (it loads
CUDA, sets up CUDA graphs or defines a GPU-only backend) runs only where a GPU is present;
a page that imports an optional library (Warp, Triton) skips where it is not installed.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
SRC = str(Path(__file__).resolve().parents[2] / "src")
GPU_MARKERS = (
    "load_cuda",
    "enable_cuda_graphs",
    "numba_cuda",
    "cuda_kernel",  # brainevent.cuda_kernel and def_cuda_kernel (NVRTC)
    "def_triton_kernel",
    "def_warp_kernel",
    'def_pallas_kernel("gpu"',
)
# A top-level import in a page's code -> (module, what to install): pages that need an optional
# library (an import guarded by a check, indented, does not count).
OPTIONAL = {r"^import warp\b": ("warp", "warp-lang"), r"^import triton\b": ("triton", "triton")}


def python_blocks(text: str) -> list[str]:
    blocks: list[str] = []
    lines = text.splitlines()
    i = 0
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


PAGES = sorted(p for p in [*DOCS.glob("*.md"), DOCS.parent / "README.md"] if python_blocks(p.read_text()))


def _marks(page: Path) -> list[pytest.MarkDecorator]:
    blocks = python_blocks(page.read_text())
    if any(m in block for block in blocks for m in GPU_MARKERS):
        return [pytest.mark.gpu, pytest.mark.nvcc]
    if any(m in block for block in blocks for m in ("load_cpp_", "numba_kernel", "brainevent build")):
        return [pytest.mark.host]  # the page's examples compile C++ with the host compiler
    return []


@pytest.mark.parametrize("page", [pytest.param(p, marks=_marks(p), id=p.name) for p in PAGES])
def test_page_examples_run(page: Path, tmp_path: Path) -> None:
    script = "\n\n".join(python_blocks(page.read_text()))
    for pattern, (module, package) in OPTIONAL.items():
        if re.search(pattern, script, re.MULTILINE) and importlib.util.find_spec(module) is None:
            pytest.skip(f"{page.name} needs {module} (pip install {package})")
    path = os.pathsep.join([SRC, *filter(None, [os.environ.get("PYTHONPATH")])])  # keep what the run added
    env = dict(os.environ, PYTHONPATH=path, BRAINEVENT_CACHE_DIR=str(tmp_path / "cache"))
    if not _marks(page):
        env["JAX_PLATFORMS"] = "cpu"
    path = tmp_path / f"{page.stem.replace('-', '_')}_examples.py"
    path.write_text(script)
    done = subprocess.run(
        [sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{page.name} examples failed:\n{done.stderr[-4000:]}"


def test_some_pages_have_examples() -> None:
    assert len(PAGES) >= 3
