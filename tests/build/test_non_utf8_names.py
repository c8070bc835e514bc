"""File and directory names that are not UTF-8 are refused with a SpecError naming them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import brainevent
from brainevent import SpecError

SRC = str(Path(__file__).resolve().parents[2] / "src")

KERNEL = """
#include "brainevent/common.h"
// @BE f arg ret
void f(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i] + 1;
}
"""


@pytest.fixture
def bad_names(tmp_path: Path) -> tuple[Path, Path]:
    """A directory holding a file named with a byte that is not UTF-8, and a directory so named."""
    base = os.fsencode(tmp_path)
    files = Path(os.fsdecode(base + b"/files"))
    files.mkdir()
    Path(os.fsdecode(base + b"/files/k\xff.cpp")).write_text(KERNEL)
    named = Path(os.fsdecode(base + b"/dir\xfe"))
    named.mkdir()
    (named / "k.cpp").write_text(KERNEL)
    return files, named


def test_load_cpp_dir_refuses_non_utf8_names(bad_names: tuple[Path, Path], tmp_path: Path) -> None:
    files, named = bad_names
    with pytest.raises(SpecError, match=r"b'.*/files/k\\xff\.cpp'.*not valid UTF-8"):
        brainevent.load_cpp_dir(files, build_directory=tmp_path / "cache", auto_register=False)
    with pytest.raises(SpecError, match=r"dir\\xfe/k\.cpp'.*not valid UTF-8"):
        brainevent.load_cpp_dir(named, build_directory=tmp_path / "cache", auto_register=False)
    with pytest.raises(SpecError, match="not valid UTF-8"):
        brainevent.load_cpp_file(named / "k.cpp", build_directory=tmp_path / "cache", auto_register=False)


def test_build_into_reports_the_file(bad_names: tuple[Path, Path], tmp_path: Path) -> None:
    files, _ = bad_names
    env = dict(os.environ, PYTHONPATH=SRC, JAX_PLATFORMS="cpu", BRAINEVENT_CACHE_DIR=str(tmp_path / "c"))
    done = subprocess.run(
        [sys.executable, "-m", "brainevent", "build", "--into", str(files), "--platform", "cpu"],
        env=env, capture_output=True, text=True, timeout=300, errors="replace",
    )  # fmt: skip
    assert done.returncode == 1
    assert "not valid UTF-8" in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]
