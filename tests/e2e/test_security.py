"""The cache is private, tampered-with artifacts are refused, and names cannot inject anything."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

import brainevent
from brainevent import CacheError, SpecError

KERNEL = r"""
#include "brainevent/common.h"
// @BE copy arg ret
void copy(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i];
}
"""


def test_cache_directories_are_private(fresh_cache: Path) -> None:
    mod = brainevent.load_cpp_inline(name="sec_private", cpp_sources=KERNEL, auto_register=False)
    for path in (fresh_cache, fresh_cache / "v1" / "sec_private", mod.cache_dir):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    assert not mod.path.stat().st_mode & 0o022


def test_world_writable_artifact_is_refused(fresh_cache: Path) -> None:
    mod = brainevent.load_cpp_inline(name="sec_writable", cpp_sources=KERNEL, auto_register=False)
    mod.path.chmod(0o777)
    with pytest.raises(
        CacheError, match=r"writable by other users \(mode 777\).*brainevent cache clear sec_writable"
    ):
        brainevent.load_cpp_inline(name="sec_writable", cpp_sources=KERNEL, auto_register=False)


@pytest.mark.skipif(
    os.getuid() != 0, reason="not applicable: changing a file's owner needs root (run as root to test it)"
)
def test_artifact_owned_by_another_user_is_refused(fresh_cache: Path) -> None:
    mod = brainevent.load_cpp_inline(name="sec_owner", cpp_sources=KERNEL, auto_register=False)
    os.chown(mod.cache_dir, 4242, 4242)
    with pytest.raises(CacheError, match="owned by uid 4242, not by this user"):
        brainevent.load_cpp_inline(name="sec_owner", cpp_sources=KERNEL, auto_register=False)


@pytest.mark.parametrize(
    "name",
    [
        "../escape",
        "a/b",
        "/abs",
        "x;rm -rf ~",
        "$(touch pwned)",
        "-rf",
        "name with space",
        "",
        "..",
        ".hidden",
        "a..b",
        "x" * 101,
        "naïve",
    ],
)
def test_module_names_cannot_escape_or_inject(name: str) -> None:
    with pytest.raises(SpecError, match="is not a valid module name"):
        brainevent.load_cpp_inline(name=name, cpp_sources=KERNEL)


@pytest.mark.parametrize("prefix", ["../x", "a b", "x;y"])
def test_target_prefixes_are_checked(prefix: str) -> None:
    with pytest.raises(SpecError, match="target_prefix"):
        brainevent.load_cpp_inline(name="sec_prefix", cpp_sources=KERNEL, target_prefix=prefix)


def test_paths_with_shell_metacharacters_are_never_interpreted(tmp_path: Path, fresh_cache: Path) -> None:
    odd = tmp_path / "dir with spaces $(touch pwned) `touch pwned2`; echo"
    odd.mkdir()
    (odd / "header.h").write_text("#pragma once\nstatic const float kTwo = 2.0f;\n")
    src = odd / "kern.cpp"
    src.write_text(
        KERNEL.replace(
            '#include "brainevent/common.h"', '#include "brainevent/common.h"\n#include "header.h"'
        )
    )
    mod = brainevent.load_cpp_file(src, auto_register=False, extra_cflags=["-DX=$(touch pwned3)"])
    assert mod.built_now and mod.path.is_file()
    for leftover in ("pwned", "pwned2", "pwned3"):
        assert not (odd / leftover).exists() and not Path(leftover).exists()
    assert not list(fresh_cache.rglob("pwned*"))


def test_cache_root_below_missing_directories_is_created_private(tmp_path: Path) -> None:
    root = tmp_path / "not" / "yet" / "cache"
    mod = brainevent.load_cpp_inline(name="sec_deep", cpp_sources=KERNEL, build_directory=str(root))
    assert mod.built_now
    for path in (tmp_path / "not", tmp_path / "not" / "yet", root):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    again = brainevent.load_cpp_inline(name="sec_deep", cpp_sources=KERNEL, build_directory=str(root))
    assert not again.built_now
