"""Host compiler limits of nvcc: the table, the toolkit headers, the real g++ here and
fake compilers (shell scripts that answer the preprocessor query like gcc or clang)."""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from brainevent import config
from brainevent.errors import ToolchainError
from brainevent.toolchain import host_compat
from brainevent.toolchain.host_compat import (
    HOST_LIMITS,
    check_host_compiler,
    host_compiler_version,
    host_limit_for,
    host_limit_from_header,
)
from brainevent.toolchain.nvcc import NvccInfo, find_nvcc, nvcc_version


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("BRAINEVENT_ALLOW_UNSUPPORTED_COMPILER", raising=False)
    host_compat.clear_cache()
    yield
    host_compat.clear_cache()


def _nvcc(version: tuple[int, int], root: str = "/nonexistent/cuda") -> NvccInfo:
    return NvccInfo(f"{root}/bin/nvcc", root, version, "test")


def _fake_compiler(directory: Path, macros: str, name: str = "g++") -> str:
    """A script that answers `-E -dM` with the given macro lines, like a real compiler."""
    path = directory / name
    body = "#!/bin/sh\ncat <<'EOF'\n" + macros + "\nEOF\n"
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _real_gxx() -> str:
    gxx = shutil.which("g++")
    if gxx is None:
        if config.REQUIRE_ALL_TESTS.get():
            pytest.fail("no g++")
        pytest.skip("no g++")
    return gxx


# -------------------------------------------------------------------- the table


@pytest.mark.parametrize(
    ("version", "gcc_max", "clang_max"),
    [
        ((12, 0), 12, 14),
        ((12, 3), 12, 16),
        ((12, 4), 13, 17),
        ((12, 6), 13, 18),
        ((12, 8), 14, 19),
        ((12, 9), 14, 19),
        ((13, 0), 15, 20),
        ((13, 5), 16, 21),
    ],
)
def test_table(version: tuple[int, int], gcc_max: int, clang_max: int) -> None:
    row = host_limit_for(version)
    assert row is not None
    assert (row.gcc_max, row.clang_max) == (gcc_max, clang_max)


@pytest.mark.parametrize("version", [(11, 8), (12, 7), (13, 1), (13, 4), (14, 0)])
def test_table_does_not_guess(version: tuple[int, int]) -> None:
    assert host_limit_for(version) is None


def test_table_rows_are_ordered_and_disjoint() -> None:
    for earlier, later in itertools.pairwise(HOST_LIMITS):
        assert earlier.first <= earlier.last < later.first
        assert earlier.gcc_max <= later.gcc_max and earlier.clang_max <= later.clang_max


def test_table_agrees_with_toolkit_headers_found_here() -> None:
    # Every real toolkit on this machine (system or pip wheel) must match its table row.
    roots: set[str] = set()
    with contextlib.suppress(ToolchainError):
        roots.add(find_nvcc().root)
    roots.update(glob.glob("/usr/local/cuda-*"))
    checked = 0
    for root in sorted(roots):
        version_file = Path(root, "bin", "nvcc")
        if not version_file.exists():
            continue
        row = host_limit_for(nvcc_version(str(version_file)))
        header = host_limit_from_header(root)
        if row is None or header is None:
            continue
        assert (header.gcc_max, header.clang_max) == (row.gcc_max, row.clang_max), root
        checked += 1
    if not checked:
        pytest.skip("not applicable: no CUDA toolkit with a known version here")


def test_header_fallback_for_releases_the_table_lacks(tmp_path: Path) -> None:
    crt = tmp_path / "targets" / "x86_64-linux" / "include" / "crt"
    crt.mkdir(parents=True)
    (crt / "host_config.h").write_text(
        "#if defined(__GNUC__)\n#if __GNUC__ > 17\n#error -- unsupported GNU version!\n"
        "#endif\n#if (__clang_major__ >= 23) || (__clang_major__ < 3)\n#error\n#endif\n#endif\n"
    )
    limit = host_limit_from_header(str(tmp_path))
    assert limit is not None and (limit.gcc_max, limit.clang_max) == (17, 22)
    assert host_limit_from_header(str(tmp_path / "missing")) is None


# ------------------------------------------------------------ real and fake compilers


@pytest.mark.host
def test_real_gxx_version_and_ok_for_nvcc13() -> None:
    gxx = _real_gxx()
    kind, major = host_compiler_version(gxx)
    assert kind == "gcc" and 5 <= major < 100
    assert host_compiler_version("g++") == (kind, major)  # a bare name is looked up
    if major <= 15:
        assert check_host_compiler(_nvcc((13, 0)), gxx) == []


@pytest.mark.nvcc
def test_real_gxx_with_real_nvcc() -> None:
    gxx = _real_gxx()
    try:
        nvcc = find_nvcc()
    except ToolchainError:
        pytest.skip("no nvcc")
    _, major = host_compiler_version(gxx)
    row = host_limit_for(nvcc.version) or host_limit_from_header(nvcc.root)
    if row is not None and major > row.gcc_max:
        pytest.skip(f"not applicable: g++ {major} is newer than nvcc {nvcc.version_string} supports")
    assert check_host_compiler(nvcc, gxx) == []


def test_too_new_gcc_is_an_error_with_both_fixes(tmp_path: Path) -> None:
    cxx = _fake_compiler(tmp_path, "#define __GNUC__ 99\n#define __GNUC_MINOR__ 1")
    assert host_compiler_version(cxx) == ("gcc", 99)
    with pytest.raises(ToolchainError) as info:
        check_host_compiler(_nvcc((13, 0)), cxx)
    text = str(info.value)
    for expected in (
        f"host compiler {cxx} is gcc 99",
        "nvcc 13.0",
        "accepts gcc <= 15",
        "BRAINEVENT_CXX=g++-15",
        "BRAINEVENT_ALLOW_UNSUPPORTED_COMPILER=1",
        "-allow-unsupported-compiler",
    ):
        assert expected in text, expected
    err = info.value
    assert (err.version, err.max_supported, err.kind) == (99, 15, "gcc")  # type: ignore[attr-defined]


def test_opt_in_by_argument_or_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cxx = _fake_compiler(tmp_path, "#define __GNUC__ 99")
    nvcc = _nvcc((12, 9))
    assert check_host_compiler(nvcc, cxx, allow_unsupported=True) == ["-allow-unsupported-compiler"]
    monkeypatch.setenv("BRAINEVENT_ALLOW_UNSUPPORTED_COMPILER", "1")
    assert check_host_compiler(nvcc, cxx) == ["-allow-unsupported-compiler"]
    with pytest.raises(ToolchainError):  # the argument overrides the environment
        check_host_compiler(nvcc, cxx, allow_unsupported=False)


def test_clang_is_told_apart_from_gcc(tmp_path: Path) -> None:
    # clang also defines __GNUC__ (as 4); its own major is what nvcc checks.
    cxx = _fake_compiler(
        tmp_path,
        "#define __GNUC__ 4\n#define __clang__ 1\n#define __clang_major__ 21",
        name="clang++",
    )
    assert host_compiler_version(cxx) == ("clang", 21)
    with pytest.raises(ToolchainError, match=r"accepts clang <= 20.*clang\+\+-20"):
        check_host_compiler(_nvcc((13, 0)), cxx)
    assert check_host_compiler(_nvcc((13, 5)), cxx) == []


def test_unknown_nvcc_release_uses_its_header(tmp_path: Path) -> None:
    crt = tmp_path / "cuda" / "include" / "crt"
    crt.mkdir(parents=True)
    (crt / "host_config.h").write_text(
        "#if __GNUC__ > 16\n#endif\n#if (__clang_major__ >= 22) || (__clang_major__ < 3)\n"
    )
    cxx = _fake_compiler(tmp_path, "#define __GNUC__ 16")
    assert check_host_compiler(_nvcc((13, 2), str(tmp_path / "cuda")), cxx) == []
    # No header and no row: nvcc itself is left to judge.
    assert check_host_compiler(_nvcc((13, 2)), cxx) == []


def test_unusable_compilers(tmp_path: Path) -> None:
    with pytest.raises(ToolchainError, match="was not found"):
        host_compiler_version("no-such-compiler-xyz")
    with pytest.raises(ToolchainError, match="was not found"):
        host_compiler_version(str(tmp_path / "missing-g++"))
    silent = _fake_compiler(tmp_path, "#define __STDC__ 1", name="cl")
    with pytest.raises(ToolchainError, match="neither __clang_major__ nor __GNUC__"):
        host_compiler_version(silent)


def test_compiler_query_is_memoized(tmp_path: Path) -> None:
    log = tmp_path / "runs.log"
    cxx = tmp_path / "g++"
    cxx.write_text(f"#!/bin/sh\necho run >> '{log}'\necho '#define __GNUC__ 12'\n")
    cxx.chmod(0o755)
    assert host_compiler_version(str(cxx)) == ("gcc", 12)
    assert host_compiler_version(str(cxx)) == ("gcc", 12)
    assert log.read_text().count("run") == 1
    os.utime(cxx, ns=(1_000_000_000, 1_000_000_000))  # a changed binary is asked again
    assert host_compiler_version(str(cxx)) == ("gcc", 12)
    assert log.read_text().count("run") == 2


# it also asks the real g++
@pytest.mark.host
def test_version_and_include_dirs_come_from_one_run(tmp_path: Path) -> None:
    from brainevent.toolchain.host import HostCompiler
    from brainevent.toolchain.host_compat import system_include_dirs

    log, include = tmp_path / "runs.log", tmp_path / "include"
    include.mkdir()
    cxx = tmp_path / "g++"
    cxx.write_text(
        f"#!/bin/sh\necho run >> '{log}'\necho '#define __GNUC__ 13'\n"
        f"printf '#include <...> search starts here:\\n {include}\\n /usr/local/include\\n"
        "End of search list.\\n' >&2\n"
    )
    cxx.chmod(0o755)
    assert system_include_dirs(HostCompiler(str(cxx), "test")) == (str(include.resolve()),)
    assert host_compiler_version(str(cxx)) == ("gcc", 13)
    assert log.read_text().count("run") == 1
    gxx = _real_gxx()  # the real compiler answers both in that one run too
    dirs = system_include_dirs(HostCompiler(gxx, "test"))
    assert dirs and all(os.path.isabs(d) for d in dirs)
    assert host_compiler_version(gxx)[0] == "gcc"
