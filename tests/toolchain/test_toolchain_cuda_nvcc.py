"""nvcc discovery against the real toolkit on this machine, plus temp-dir layouts that
stand for pip wheels, CUDA_HOME, wrapper scripts and symlinks."""

from __future__ import annotations

import os
import shutil
import site
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from brainevent import config
from brainevent.errors import ToolchainError
from brainevent.fileio import file_identity
from brainevent.toolchain import nvcc as nvcc_mod
from brainevent.toolchain.nvcc import (
    NvccInfo,
    ToolchainWarning,
    check_jax_plugin_match,
    find_nvcc,
    nvcc_version,
    parse_nvcc_version,
)

_ORIGINAL_PATH = os.environ.get("PATH", "")


def _skip_or_fail(reason: str) -> None:
    if config.REQUIRE_ALL_TESTS.get():
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def real_nvcc() -> NvccInfo:
    """The nvcc this machine has, found the ordinary way (skips when there is none)."""
    try:
        return find_nvcc()
    except ToolchainError as exc:
        _skip_or_fail(f"no nvcc: {exc}")
        raise


@pytest.fixture
def bare_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No BRAINEVENT_NVCC / conda / CUDA_HOME / CUDA_PATH, and an empty PATH dir."""
    for var in ("BRAINEVENT_NVCC", "CONDA_PREFIX", "CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(var, raising=False)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    _site_packages(monkeypatch)
    return empty


def _site_packages(monkeypatch: pytest.MonkeyPatch, *dirs: Path) -> None:
    """What cuda-pathfinder and the CUDA 12 wheel check take for site-packages."""
    monkeypatch.setattr(site, "getsitepackages", lambda: [str(d) for d in dirs])
    monkeypatch.setattr(site, "ENABLE_USER_SITE", False)


def _write_script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


# ------------------------------------------------------------------- pure parsing


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "nvcc: NVIDIA (R) Cuda compiler driver\n"
            "Cuda compilation tools, release 13.0, V13.0.88\n"
            "Build cuda_13.0.r13.0/compiler.36424714_0\n",
            (13, 0),
        ),
        ("Cuda compilation tools, release 12.9, V12.9.86", (12, 9)),
        ("Cuda compilation tools, release 11.8, V11.8.89", (11, 8)),
        ("no version here", None),
        ("release x.y", None),
    ],
)
def test_parse_nvcc_version(text: str, expected: tuple[int, int] | None) -> None:
    assert parse_nvcc_version(text) == expected


def test_nvcc_version_of_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ToolchainError, match="is unusable"):
        nvcc_version(tmp_path / "nvcc")


def test_identity_uses_stat_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = tmp_path / "nvcc"
    tool.write_text("x")
    link = tmp_path / "link"
    link.symlink_to(tool)

    def no_subprocess(*args: object, **kwargs: object) -> None:
        raise AssertionError("the identity nvcc is keyed by must not run a subprocess")

    monkeypatch.setattr(subprocess, "run", no_subprocess)
    first = file_identity(link, missing_ok=False)
    assert first == file_identity(tool, missing_ok=False)
    assert first.startswith(str(tool.resolve()) + ":1:")
    os.utime(tool, ns=(1_000_000_000, 2_000_000_000))
    assert file_identity(tool, missing_ok=False) != first
    assert file_identity(tool, missing_ok=False).endswith(":2000000000")
    with pytest.raises(OSError):
        file_identity(tmp_path / "gone", missing_ok=False)


# ---------------------------------------------------------- layouts without nvcc


def test_nothing_found_lists_every_place(bare_env: Path, tmp_path: Path) -> None:
    with pytest.raises(ToolchainError) as info:
        find_nvcc(default_roots=(str(tmp_path / "no-cuda"),), pathfinder=False)
    text = str(info.value)
    assert text.startswith("nvcc was not found. Searched, in order:")
    for expected in (
        "none given, BRAINEVENT_NVCC unset",
        "cuda-pathfinder (NVIDIA pip wheels, $CONDA_PREFIX, $CUDA_PATH, $CUDA_HOME, the CUDA runtime's "
        "toolkit): skipped",
        "no nvcc on PATH",
        f"default:{tmp_path / 'no-cuda'}: {tmp_path / 'no-cuda' / 'bin' / 'nvcc'} (rejected: no such file)",
        'pip install "nvidia-cuda-nvcc>=13" nvidia-cuda-cccl',
        "conda install -c conda-forge cuda-nvcc",
        "BRAINEVENT_NVCC",
    ):
        assert expected in text, expected
    assert info.value.cuda12_wheels_only is False  # type: ignore[attr-defined]
    assert [c.found_via for c in info.value.candidates] == [  # type: ignore[attr-defined]
        f"default:{tmp_path / 'no-cuda'}"
    ]


def test_cuda12_wheels_only_explains_there_is_no_nvcc(
    bare_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site_dir = tmp_path / "site-packages"
    ptxas = _write_script(site_dir / "nvidia" / "cuda_nvcc" / "bin" / "ptxas", "#!/bin/sh\n")
    (site_dir / "nvidia" / "__init__.py").write_text("")  # a regular package, as cu12 ships
    _site_packages(monkeypatch, site_dir)
    with pytest.raises(ToolchainError) as info:
        find_nvcc(default_roots=(), pathfinder=False)
    text = str(info.value)
    assert text.startswith("nvcc was not found (pip's CUDA 12 wheels carry none). Searched, in order:")
    nvcc_path = ptxas.with_name("nvcc")
    assert (
        f"pip-wheel:nvidia-cuda-nvcc-cu12: {nvcc_path} "
        "(rejected: CUDA 12 pip wheels ship ptxas but no nvcc)" in text
    )
    for expected in (
        "CUDA 12 pip wheels (nvidia-cuda-nvcc-cu12, as installed by jax[cuda12] and "
        "brainevent[cuda12]) ship no nvcc",
        "conda install -c conda-forge cuda-nvcc cuda-version=12.9",
        "a system CUDA 12 toolkit",
        "nvidia/cuda:12.x-devel",
        'pip install "nvidia-cuda-nvcc>=13" nvidia-cuda-cccl',
    ):
        assert expected in text, expected
    assert info.value.cuda12_wheels_only is True  # type: ignore[attr-defined]


def test_cuda_home_without_nvcc_is_recorded(
    bare_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "cuda-home"
    (home / "bin").mkdir(parents=True)
    monkeypatch.setenv("CUDA_HOME", str(home))
    monkeypatch.setenv("CUDA_PATH", str(tmp_path / "cuda-path"))
    monkeypatch.setenv("BRAINEVENT_NVCC_PREFER", "system")  # our own look at the toolkit roots
    with pytest.raises(ToolchainError) as info:
        find_nvcc(default_roots=(), pathfinder=False)
    cands = info.value.candidates  # type: ignore[attr-defined]
    assert (str(home / "bin" / "nvcc"), "env:CUDA_HOME", "rejected: no such file") in cands
    assert ("env:CUDA_PATH") in [c.found_via for c in cands]


def test_broken_explicit_nvcc_is_an_error_not_a_fallthrough(
    bare_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ToolchainError) as info:
        find_nvcc(str(tmp_path / "nope" / "nvcc"), default_roots=(), pathfinder=False)
    assert "nvcc given via argument" in str(info.value)
    assert "no such file" in str(info.value)
    assert info.value.found_via == "argument"  # type: ignore[attr-defined]

    monkeypatch.setenv("BRAINEVENT_NVCC", str(tmp_path))  # a directory without bin/nvcc
    with pytest.raises(ToolchainError) as info:
        find_nvcc(default_roots=(), pathfinder=False)
    assert "nvcc given via env:BRAINEVENT_NVCC" in str(info.value)


def test_nvcc_that_cannot_report_a_version_is_rejected(bare_env: Path, tmp_path: Path) -> None:
    fake = _write_script(tmp_path / "fake" / "bin" / "nvcc", "#!/bin/sh\necho hello\n")
    with pytest.raises(ToolchainError) as info:
        find_nvcc(pathfinder=False, default_roots=(str(fake.parent.parent),))
    (cand,) = info.value.candidates  # type: ignore[attr-defined]
    assert cand.note.startswith("rejected: it is a wrapper script, and neither")


def test_not_executable_is_rejected(bare_env: Path, tmp_path: Path) -> None:
    plain = tmp_path / "root" / "bin" / "nvcc"
    plain.parent.mkdir(parents=True)
    plain.write_text("not a program")
    with pytest.raises(ToolchainError) as info:
        find_nvcc(pathfinder=False, default_roots=(str(tmp_path / "root"),))
    assert info.value.candidates[0].note == "rejected: not executable"  # type: ignore[attr-defined]


# ------------------------------------------------------------- the real toolkit


@pytest.mark.nvcc
def test_real_nvcc_is_a_binary_in_its_toolkit(real_nvcc: NvccInfo) -> None:
    assert os.path.isfile(real_nvcc.path)
    with open(real_nvcc.path, "rb") as fh:
        assert fh.read(2) != b"#!"
    assert Path(real_nvcc.root, "bin", Path(real_nvcc.path).name) == Path(real_nvcc.path)
    assert real_nvcc.version >= (11, 0)
    assert real_nvcc.candidates[-1].note.startswith("accepted: ")
    out = subprocess.run([real_nvcc.path, "--version"], capture_output=True, text=True).stdout
    assert parse_nvcc_version(out) == real_nvcc.version == nvcc_version(real_nvcc.path)


@pytest.mark.nvcc
def test_path_wrapper_is_resolved_to_the_real_toolkit(
    real_nvcc: NvccInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("BRAINEVENT_NVCC", "CONDA_PREFIX", "CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(var, raising=False)
    on_path = shutil.which("nvcc")
    if on_path is None:
        pytest.skip("not applicable: no nvcc on PATH")
    info = find_nvcc(default_roots=(), pathfinder=False)
    assert info.found_via == "PATH"
    assert info.candidates[0].path == on_path
    with open(on_path, "rb") as fh:
        is_wrapper = fh.read(2) == b"#!"
    if is_wrapper and on_path == "/usr/local/bin/nvcc" and Path("/usr/local/cuda-13.0").is_dir():
        # This machine: /usr/local/bin/nvcc is `exec /usr/local/cuda-13.0/bin/nvcc "$@"`.
        assert info.path == "/usr/local/cuda-13.0/bin/nvcc"
        assert info.root == "/usr/local/cuda-13.0"
    if not is_wrapper:
        assert info.path == os.path.realpath(on_path)
    # (The default search may prefer another nvcc, e.g. a CUDA 13 pip wheel, so the PATH
    # result is not compared with it.)


@pytest.mark.nvcc
def test_own_wrapper_script_on_path(real_nvcc: NvccInfo, bare_env: Path) -> None:
    wrapper = _write_script(bare_env / "nvcc", f'#!/bin/sh\nexec "{real_nvcc.path}" "$@"\n')
    info = find_nvcc(default_roots=(), pathfinder=False)
    assert (info.path, info.root, info.found_via) == (real_nvcc.path, real_nvcc.root, "PATH")
    assert info.candidates == (
        (str(wrapper), "PATH", f"accepted: {real_nvcc.path} (CUDA {info.version_string})"),
    )


@pytest.mark.nvcc
def test_exec_wrapper_is_resolved_from_its_text(
    real_nvcc: NvccInfo, bare_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `exec /abs/nvcc "$@"` alone names what it runs: no dry run (which runs the host compiler).
    wrapper = _write_script(bare_env / "nvcc", f'#!/bin/sh\n# a comment\nexec "{real_nvcc.path}" "$@"\n')

    def no_subprocess(*args: object, **kwargs: object) -> None:
        raise AssertionError("an exec wrapper needs no dry run")

    monkeypatch.setattr(subprocess, "run", no_subprocess)
    assert nvcc_mod._probe_wrapper(str(wrapper)) == real_nvcc.path


@pytest.mark.nvcc
def test_wrapper_hiding_the_path_is_resolved_by_dryrun(
    real_nvcc: NvccInfo, bare_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The script's text names no nvcc path, so only nvcc's own dry run can tell; the dry
    # run needs a host compiler on PATH.
    gcc = shutil.which("gcc", path=_ORIGINAL_PATH)
    if gcc is None:
        _skip_or_fail("no gcc for nvcc -dryrun")
    assert gcc is not None
    bin_dir = os.path.dirname(real_nvcc.path)
    _write_script(bare_env / "nvcc", f'#!/bin/sh\nD="{bin_dir}"\nexec "$D/nvcc" "$@"\n')
    with pytest.raises(ToolchainError, match="neither `nvcc -dryrun` nor its text"):
        find_nvcc(default_roots=(), pathfinder=False)
    nvcc_mod.clear_version_cache()
    monkeypatch.setenv("PATH", f"{bare_env}{os.pathsep}{os.path.dirname(gcc)}")
    info = find_nvcc(default_roots=(), pathfinder=False)
    assert (info.path, info.root, info.found_via) == (real_nvcc.path, real_nvcc.root, "PATH")


@pytest.mark.nvcc
def test_symlink_on_path(real_nvcc: NvccInfo, bare_env: Path) -> None:
    (bare_env / "nvcc").symlink_to(real_nvcc.path)
    info = find_nvcc(default_roots=(), pathfinder=False)
    assert (info.path, info.root, info.found_via) == (real_nvcc.path, real_nvcc.root, "PATH")


@pytest.mark.nvcc
def test_default_root(real_nvcc: NvccInfo, bare_env: Path, tmp_path: Path) -> None:
    info = find_nvcc(pathfinder=False, default_roots=(str(tmp_path / "none"), real_nvcc.root))
    assert info.found_via == f"default:{real_nvcc.root}"
    assert [c.note.split(":")[0] for c in info.candidates] == ["rejected", "accepted"]


@pytest.mark.nvcc
def test_env_and_argument(real_nvcc: NvccInfo, bare_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAINEVENT_NVCC", real_nvcc.path)
    info = find_nvcc(default_roots=(), pathfinder=False)
    assert (info.path, info.found_via) == (real_nvcc.path, "env:BRAINEVENT_NVCC")
    # The argument comes first; a toolkit root is accepted in place of the binary.
    info = find_nvcc(real_nvcc.root, default_roots=(), pathfinder=False)
    assert (info.path, info.found_via) == (real_nvcc.path, "argument")
    assert len(info.candidates) == 1


@pytest.mark.nvcc
def test_cuda_home_rejected_then_path(
    real_nvcc: NvccInfo, bare_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "empty-cuda"
    home.mkdir()
    monkeypatch.setenv("CUDA_HOME", str(home))
    monkeypatch.setenv("BRAINEVENT_NVCC_PREFER", "system")
    (bare_env / "nvcc").symlink_to(real_nvcc.path)
    info = find_nvcc(default_roots=(), pathfinder=False)
    assert info.found_via == "PATH"
    assert info.candidates[0] == (
        str(home / "bin" / "nvcc"),
        "env:CUDA_HOME",
        "rejected: no such file",
    )


@pytest.mark.nvcc
def test_wheel_layout_comes_before_path(
    real_nvcc: NvccInfo, bare_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # cuda-pathfinder resolves symlinks, so the wheel's nvcc is a wrapper script here.
    site_dir = tmp_path / "site-packages"
    wheel_nvcc = _write_script(
        site_dir / "nvidia" / "cu13" / "bin" / "nvcc", f'#!/bin/sh\nexec "{real_nvcc.path}" "$@"\n'
    )
    _write_script(site_dir / "nvidia" / "cuda_nvcc" / "bin" / "ptxas", "#!/bin/sh\n")
    (bare_env / "nvcc").symlink_to(real_nvcc.path)
    _site_packages(monkeypatch, site_dir)
    info = find_nvcc(default_roots=())
    assert info.found_via == "pip-wheel:nvidia-cuda-nvcc"
    assert (info.path, info.root) == (real_nvcc.path, real_nvcc.root)
    assert info.candidates[-1].path == str(wheel_nvcc.resolve())


@pytest.mark.nvcc
def test_found_through_cuda_home(
    real_nvcc: NvccInfo, bare_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if real_nvcc.found_via.startswith("pip-wheel"):
        pytest.skip("not applicable: the nvcc here is the pip wheel, which the search finds before CUDA_HOME")
    monkeypatch.setenv("CUDA_HOME", real_nvcc.root)
    info = find_nvcc(default_roots=())
    assert (info.path, info.root, info.found_via) == (real_nvcc.path, real_nvcc.root, "env:CUDA_HOME")


@pytest.mark.nvcc
def test_a_wheel_installed_later_is_found_despite_the_memo(
    real_nvcc: NvccInfo, bare_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if real_nvcc.found_via.startswith("pip-wheel"):
        pytest.skip("not applicable: the nvcc here is the pip wheel, which the search finds before CUDA_HOME")
    site_dir = tmp_path / "site-packages"
    site_dir.mkdir()
    monkeypatch.setenv("CUDA_HOME", real_nvcc.root)
    monkeypatch.setenv("PYTHONPATH", str(Path(nvcc_mod.__file__).parents[2]))
    search = (  # in a new process, as after a pip install: only the memo on disk is shared
        f"import site; site.getsitepackages = lambda: [{str(site_dir)!r}]; site.ENABLE_USER_SITE = False; "
        "from brainevent.toolchain.nvcc import find_nvcc; print(find_nvcc(default_roots=()).found_via)"
    )

    def found_via() -> str:
        return subprocess.run(
            [sys.executable, "-c", search], capture_output=True, text=True, check=True
        ).stdout

    assert found_via().strip() == "env:CUDA_HOME"
    assert "nvcc-pathfinder|" in (config.CACHE_DIR.get() / "toolchain-memo.json").read_text()
    _write_script(site_dir / "nvidia" / "cu13" / "bin" / "nvcc", f'#!/bin/sh\nexec "{real_nvcc.path}" "$@"\n')
    assert found_via().strip() == "pip-wheel:nvidia-cuda-nvcc"


@pytest.mark.nvcc
def test_system_wrapper_script_resolves_to_the_real_toolkit(bare_env: Path) -> None:
    # /usr/local/bin/nvcc on a system toolkit install is often a script, not a link.
    wrapper = "/usr/local/bin/nvcc"
    if not os.path.isfile(wrapper) or not nvcc_mod._is_script(wrapper):
        pytest.skip(f"not applicable: {wrapper} is not a wrapper script here")
    info = find_nvcc(wrapper, default_roots=())
    assert info.found_via == "argument"
    assert not nvcc_mod._is_script(info.path)
    assert os.path.isfile(os.path.join(info.root, "include", "cuda_runtime.h"))
    assert info.version == nvcc_version(info.path)


@pytest.mark.nvcc
def test_version_is_memoized(real_nvcc: NvccInfo, monkeypatch: pytest.MonkeyPatch) -> None:
    nvcc_version(real_nvcc.path)

    def no_subprocess(*args: object, **kwargs: object) -> None:
        raise AssertionError("the version should come from the memo")

    monkeypatch.setattr(nvcc_mod.subprocess, "run", no_subprocess)
    assert nvcc_version(real_nvcc.path) == real_nvcc.version
    info = find_nvcc(real_nvcc.path, default_roots=(), pathfinder=False)
    assert info.version == real_nvcc.version


# ------------------------------------------------------- nvcc vs JAX's plugin


def _fake_dist(root: Path, name: str, version: str) -> None:
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def _fake_nvcc(version: tuple[int, int]) -> NvccInfo:
    return NvccInfo("/opt/cuda/bin/nvcc", "/opt/cuda", version, "test")


def test_plugin_mismatch_warns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if nvcc_mod.installed_jax_cuda_plugins():
        pytest.skip("not applicable: a real JAX CUDA plugin is installed here")
    assert check_jax_plugin_match(_fake_nvcc((13, 0))) is None  # no plugin: nothing to say
    _fake_dist(tmp_path, "jax-cuda12-plugin", "0.10.2")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert nvcc_mod.installed_jax_cuda_plugins() == {"jax-cuda12-plugin": ("0.10.2", 12)}
    with pytest.warns(ToolchainWarning) as record:
        message = check_jax_plugin_match(_fake_nvcc((13, 0)))
    assert message is not None and str(record[0].message) == message
    for expected in (
        "CUDA 13.0",
        "jax-cuda12-plugin 0.10.2",
        "statically",
        "driver >= 580",
        "BRAINEVENT_NVCC",
        'pip install "jax[cuda13]"',
    ):
        assert expected in message, expected
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_jax_plugin_match(_fake_nvcc((12, 8))) is None


def test_plugin_older_nvcc_warns_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if nvcc_mod.installed_jax_cuda_plugins():
        pytest.skip("not applicable: a real JAX CUDA plugin is installed here")
    _fake_dist(tmp_path, "jax-cuda13-plugin", "0.10.2")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(ToolchainWarning, match="two CUDA runtimes"):
        check_jax_plugin_match(_fake_nvcc((12, 9)))


def test_a_new_ld_library_path_is_a_new_search(
    real_nvcc: NvccInfo, bare_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The loader's answer (pathfinder's last step) depends on LD_LIBRARY_PATH, so the memo must too.
    monkeypatch.setenv("CUDA_HOME", real_nvcc.root)
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path / "a"))
    first = find_nvcc(default_roots=())
    misses = nvcc_mod._find_in_context.cache_info().misses
    find_nvcc(default_roots=())
    assert nvcc_mod._find_in_context.cache_info().misses == misses
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path / "b"))
    again = find_nvcc(default_roots=())
    assert nvcc_mod._find_in_context.cache_info().misses == misses + 1
    # The same nvcc, under $CUDA_HOME. (Its label names the first of pathfinder's places it lies
    # in: env:CUDA_HOME for a toolkit, pip-wheel:... where $CUDA_HOME is NVIDIA's nvcc wheel.)
    assert (again.path, again.found_via) == (first.path, first.found_via)
    assert again.found_via in ("env:CUDA_HOME", "pip-wheel:nvidia-cuda-nvcc")
    assert Path(again.path).is_relative_to(os.path.realpath(real_nvcc.root)), again
