"""The environment variables the toolchains read are one table (environment.py),
read by the cache key, the toolchain memo and every shortcut that decides a hit: a header
found through CPATH is another build when CPATH points elsewhere, in this process and in a
later one."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import brainevent

SRC = Path(__file__).resolve().parents[2] / "src" / "brainevent"
KERNEL = r"""
#include "brainevent/common.h"
// @BE recall_scale arg ret
void recall_scale(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = SCALE * x.data_ptr<float>()[i];
}
"""
PROBE = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import brainevent
    mod = brainevent.load_cpp_inline(name="recall_mod", cpp_sources=sys.argv[2].replace("SCALE", sys.argv[1]))
    y = np.asarray(mod.recall_scale(np.arange(4, dtype=np.float32)))
    print(json.dumps({"built_now": mod.built_now, "y": y.tolist()}))
    """
)


def _load(cache: Path, scale: str, kernel: str, **variables: str) -> dict[str, object]:
    """A load in a fresh process, as a program's first load is."""
    env = dict(os.environ, BRAINEVENT_CACHE_DIR=str(cache), JAX_PLATFORMS="cpu", **variables)
    env["PYTHONPATH"] = str(SRC.parent) + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, scale, kernel], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# Modules that read os.environ for what is not a toolchain's: BRAINEVENT_* (config.py), the
# table itself, the OpenMP runtime's policy, XLA's flags, the visible GPUs, and doctor's report.
_OWN_VARIABLES = {
    "config.py", "environment.py", "runtime/openmp.py", "cuda_graphs.py",
    "toolchain/cuda_driver.py", "doctor.py", "errors.py",
}  # fmt: skip
VALUE = "#include <be_env_value.h>\n"


def _headers(tmp_path: Path) -> tuple[Path, Path]:
    one, two = tmp_path / "one", tmp_path / "two"
    for directory, scale in ((one, "2.0f"), (two, "3.0f")):
        directory.mkdir()
        (directory / "be_env_value.h").write_text(f"#define ENV_SCALE {scale}\n")
    return one, two


@pytest.mark.parametrize("variable", ["CPATH", "CPLUS_INCLUDE_PATH"])
def test_a_header_found_through_a_compiler_variable_is_rebuilt_when_it_points_elsewhere(
    tmp_path: Path, variable: str
) -> None:
    one, two = _headers(tmp_path)
    kernel, cache = VALUE + KERNEL, tmp_path / "cache"
    first = _load(cache, "ENV_SCALE", kernel, **{variable: str(one)})
    assert first["built_now"] is True and first["y"] == [0.0, 2.0, 4.0, 6.0]
    assert _load(cache, "ENV_SCALE", kernel, **{variable: str(one)})["built_now"] is False
    other = _load(cache, "ENV_SCALE", kernel, **{variable: str(two)})
    assert other["built_now"] is True and other["y"] == [0.0, 3.0, 6.0, 9.0]
    back = _load(cache, "ENV_SCALE", kernel, **{variable: str(one)})
    assert back["built_now"] is False and back["y"] == [0.0, 2.0, 4.0, 6.0]


def test_cpath_is_keyed_within_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one, two = _headers(tmp_path)
    source = (VALUE + KERNEL).replace("SCALE *", "ENV_SCALE *").replace("recall_scale", "env_scale")
    x = np.arange(4, dtype=np.float32)
    results = []
    for directory in (one, two):
        monkeypatch.setenv("CPATH", str(directory))
        mod = brainevent.load_cpp_inline(
            name="env_scale", cpp_sources=source, build_directory=tmp_path / "cache", replace=True
        )
        results.append((mod.built_now, np.asarray(mod.env_scale(x)).tolist()))
    assert results == [(True, [0.0, 2.0, 4.0, 6.0]), (True, [0.0, 3.0, 6.0, 9.0])]


def test_the_cuda_toolchain_memo_is_keyed_by_every_variable_of_the_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from brainevent.environment import TOOLCHAIN_ENVIRONMENT
    from brainevent.platforms.cuda import _search_context

    for name in TOOLCHAIN_ENVIRONMENT:
        monkeypatch.setenv(name, "/one")
        before = _search_context("sm_80")
        monkeypatch.setenv(name, "/two")
        assert _search_context("sm_80") != before, f"the memo of nvcc's search ignores {name}"


def test_the_table_is_the_only_list_of_toolchain_variables() -> None:
    """Refuses a second list: outside the modules that read their own variables, nothing reads
    os.environ, and every variable read through the table is in it."""
    from brainevent.environment import TOOLCHAIN_ENVIRONMENT

    readers, unknown = [], []
    for path in SRC.rglob("*.py"):
        name = path.relative_to(SRC).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            reads = isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv")
            if reads and name not in _OWN_VARIABLES:
                readers.append(f"{name}:{node.lineno}")
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "variable"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value not in TOOLCHAIN_ENVIRONMENT
            ):
                unknown.append(f"{name}:{node.lineno} {node.args[0].value}")
    assert readers == [], "read the toolchain's environment through environment.py"
    assert unknown == [], "add the variable to TOOLCHAIN_ENVIRONMENT"
