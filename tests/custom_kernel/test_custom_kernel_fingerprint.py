"""What counts as a backend's source for remembered choices: code, reachable helpers and
constants, compiled builds and library versions; not comments, layout or library code."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path
from types import ModuleType

import pytest

import brainevent
from brainevent.custom_kernel import XLACustomKernel
from brainevent.custom_kernel.remembered import entry_fingerprint, sources_fingerprint, versions

_ids = itertools.count()

KERNELS = """
import numpy as np

SCALE = 2.0


def helper(v):
    return v * SCALE


def make(k):
    def generator(outs, offset=1.0):
        def kernel(v):
            return (helper(v) + k + offset + np.float32(0),)

        return kernel

    return generator


generator = make(3.0)
"""


def load(tmp_path: Path, text: str) -> ModuleType:
    """``text`` as a fresh module from a file of its own (as a user's kernels would be)."""
    name = f"fp_kernels_{next(_ids)}"
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def fingerprint(module: ModuleType) -> str:
    op = XLACustomKernel(f"fp_{next(_ids)}").def_kernel("gen", "cpu", module.generator)
    return entry_fingerprint(op._kernels["cpu"]["gen"])


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("SCALE = 2.0", "SCALE = 2.5"),  # a module constant a helper reads
        ("return v * SCALE", "return v * SCALE * 1.0"),  # a helper's code
        ("generator = make(3.0)", "generator = make(4.0)"),  # a closure value
        ("offset=1.0", "offset=1.5"),  # a default
        ("+ k + offset", "- k + offset"),  # the nested kernel's code
    ],
)
def test_a_change_that_alters_behaviour_changes_the_fingerprint(tmp_path: Path, old: str, new: str) -> None:
    assert old in KERNELS
    assert fingerprint(load(tmp_path, KERNELS)) != fingerprint(load(tmp_path, KERNELS.replace(old, new)))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("def helper(v):", "# the helper\n\n\ndef helper(v):"),  # comments, blank lines
        ("return (helper(v) + k", "return (helper(v)  +  k"),  # spacing
        ("import numpy as np", "import numpy as np\nimport math"),  # an unused import
    ],
)
def test_comments_and_layout_do_not_change_it(tmp_path: Path, old: str, new: str) -> None:
    assert old in KERNELS
    assert fingerprint(load(tmp_path, KERNELS)) == fingerprint(load(tmp_path, KERNELS.replace(old, new)))


def test_numba_kernels_are_hashed_through_their_python_function(tmp_path: Path) -> None:
    pytest.importorskip("numba")
    text = "import numba\n\n@numba.njit\ndef generator(x, out):\n    out[0] = x[0] + 1.0\n"
    changed = text.replace("+ 1.0", "+ 2.0")
    assert fingerprint(load(tmp_path, text)) != fingerprint(load(tmp_path, changed))
    assert fingerprint(load(tmp_path, text)) == fingerprint(load(tmp_path, text))


def test_a_compiled_function_is_identified_by_its_build(tmp_path: Path) -> None:
    source = r"""
#include "brainevent/common.h"
// @BE inc arg ret
void inc(const BE::Tensor x, BE::Tensor out) {
  for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i] + %s;
}
"""
    name = f"fp_inc_{next(_ids)}"
    first = brainevent.load_cpp_inline(name=name, cpp_sources=source % "1.0f")
    op = XLACustomKernel(f"fp_{next(_ids)}").def_kernel("cpu", first.inc)
    before = entry_fingerprint(op._kernels["cpu"]["cpp"])
    assert before == entry_fingerprint(op._kernels["cpu"]["cpp"])
    brainevent.load_cpp_inline(name=name, cpp_sources=source % "2.0f")  # the same target, new code
    assert entry_fingerprint(op._kernels["cpu"]["cpp"]) != before


def test_the_platform_fingerprint_covers_every_backend_and_the_library_versions(tmp_path: Path) -> None:
    module = load(tmp_path, KERNELS)
    op = XLACustomKernel(f"fp_{next(_ids)}").def_kernel("gen", "cpu", module.generator)
    alone = sources_fingerprint(op._kernels["cpu"])
    op.def_kernel("other", "cpu", lambda outs: lambda v: (v,))
    assert sources_fingerprint(op._kernels["cpu"]) != alone
    found = versions(["warp", "triton", "gen"])
    assert {"python", "jax", "jaxlib", "brainevent", "warp-lang", "triton"} <= set(found)
    assert found["jax"] == __import__("jax").__version__
