"""The command line: doctor, cache list/info/clear/prune, build; and lock-wait logging."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import brainevent

SRC = str(Path(__file__).resolve().parents[2] / "src")

KERNEL = r"""
#include "brainevent/common.h"
// @BE negate arg ret
void negate(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = -x.data_ptr<float>()[i];
}
"""

CUDA_KERNEL = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"
__global__ void k(float* o, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) o[i] = 1.0f; }
// @BE ones ret stream
void ones(BE::Tensor out, int64_t stream) {
    int n = out.numel();
    k<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(out.data_ptr<float>(), n);
}
"""


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, PYTHONPATH=SRC, JAX_PLATFORMS="cpu")
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "brainevent", *args], env=full, capture_output=True, text=True, timeout=600
    )


@pytest.mark.host
def test_demo_builds_into_the_cache_dir_given(tmp_path: Path) -> None:
    done = _cli("--cache-dir", str(tmp_path), "demo")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "matches NumPy: True" in done.stdout
    assert f": {tmp_path}" in done.stdout and any(tmp_path.rglob("libbrainevent_demo*.so"))


def test_doctor_reports_this_machine(fresh_cache: Path) -> None:
    brainevent.load_cpp_inline(name="doc_mod", cpp_sources=KERNEL, auto_register=False)
    done = _cli("doctor", env={"BRAINEVENT_CACHE_DIR": str(fresh_cache)})
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    from brainevent.toolchain.host import find_host_compiler

    gxx = os.path.realpath(find_host_compiler().path)
    if not any(os.environ.get(v) for v in ("BRAINEVENT_CXX", "CXX", "CONDA_PREFIX")):
        assert gxx == os.path.realpath(shutil.which("g++") or "")  # the PATH search found g++
    assert f"path               {gxx} (" in out
    assert f"directory          {fresh_cache}" in out
    assert "1 entries of 1 modules" in out
    if shutil.which("nvcc"):
        from brainevent.toolchain.nvcc import find_nvcc

        assert f"path               {find_nvcc().path} (CUDA" in out
        assert "smoke compile      ok (sm_80)" in out
    from brainevent.toolchain.cuda_driver import probe_devices

    if not probe_devices().devices:
        assert "devices            none (" in out


# doctor's smoke compile runs the host compiler
@pytest.mark.host
def test_doctor_fails_on_a_broken_nvcc(tmp_path: Path) -> None:
    broken = tmp_path / "nvcc"
    broken.write_text("#!/bin/sh\necho 'nvcc: broken install' >&2\nexit 3\n")
    broken.chmod(0o755)
    done = _cli("doctor", env={"BRAINEVENT_NVCC": str(broken), "BRAINEVENT_CACHE_DIR": str(tmp_path / "c")})
    assert done.returncode == 1
    assert (
        "PROBLEM:" in done.stdout
        and ", but no usable nvcc" in done.stdout
        and "BRAINEVENT_NVCC" in done.stdout
    )


def test_doctor_fails_without_a_host_compiler(tmp_path: Path) -> None:
    done = _cli("doctor", "--no-compile", env={"BRAINEVENT_CXX": str(tmp_path / "no-such-g++")})
    assert done.returncode == 1
    assert "does not name an executable C++ compiler" in done.stdout


def _without_compilers(tmp_path: Path, cache: Path) -> dict[str, str]:
    """The environment of a node without compilers: nothing on PATH, no CXX, no conda."""
    env = {k: v for k, v in os.environ.items() if k not in ("CXX", "CONDA_PREFIX", "CUDA_HOME", "CUDA_PATH")}
    env = {k: v for k, v in env.items() if not k.startswith(("BRAINEVENT_CXX", "BRAINEVENT_NVCC"))}
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    return dict(env, PATH=str(empty), PYTHONPATH=SRC, JAX_PLATFORMS="cpu", BRAINEVENT_CACHE_DIR=str(cache))


def test_doctor_on_a_node_without_compilers_is_load_only(fresh_cache: Path, tmp_path: Path) -> None:
    brainevent.load_cpp_inline(name="aot_doc", cpp_sources=KERNEL, auto_register=False)
    env = _without_compilers(tmp_path, fresh_cache)
    done = subprocess.run(
        [sys.executable, "-m", "brainevent", "doctor"], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "PROBLEM" not in out
    assert "load-only: OK" in out and "ok: C++ builds work" not in out
    assert "cannot build C++ modules: no host compiler" in out
    assert "load check         1 of 1 cached libraries load" in out
    if "smoke compile      skipped: nvcc needs a host compiler" in out:  # nvcc in a default root
        assert "cannot build CUDA modules: nvcc needs a host compiler" in out
    required = subprocess.run(
        [sys.executable, "-m", "brainevent", "doctor", "--require-build"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert required.returncode == 1 and "--require-build: this node must build" in required.stdout


def test_doctor_load_only_reports_a_library_that_does_not_load(fresh_cache: Path, tmp_path: Path) -> None:
    mod = brainevent.load_cpp_inline(name="aot_broken", cpp_sources=KERNEL, auto_register=False)
    Path(mod.path).write_bytes(b"not an ELF file")  # what a half-copied cache would hold
    done = subprocess.run(
        [sys.executable, "-m", "brainevent", "doctor", "--no-compile"],
        env=_without_compilers(tmp_path, fresh_cache),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, done.stdout
    assert "load check         0 of 1 cached libraries load" in done.stdout
    assert "PROBLEM: a cached library does not load: aot_broken/" in done.stdout


def test_doctor_survives_a_cached_library_that_aborts_when_loaded(fresh_cache: Path, tmp_path: Path) -> None:
    # A constructor that ends the process stands for a sanitizer build (ASan aborts when its
    # runtime was not preloaded): the load check must name it, and check the rest.
    constructor = "__attribute__((constructor)) static void die() { std::abort(); }"
    aborting = f"{KERNEL}\n#include <cstdlib>\n{constructor}\n"
    brainevent.load_cpp_inline(name="aot_fine", cpp_sources=KERNEL, auto_register=False)
    source = tmp_path / "aot_aborts.cpp"
    source.write_text(aborting)
    built = subprocess.run(  # `brainevent build` compiles without loading
        [sys.executable, "-m", "brainevent", "build", str(source)],
        env=dict(os.environ, PYTHONPATH=SRC, JAX_PLATFORMS="cpu", BRAINEVENT_CACHE_DIR=str(fresh_cache)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    done = subprocess.run(
        [sys.executable, "-m", "brainevent", "doctor", "--no-compile"],
        env=_without_compilers(tmp_path, fresh_cache),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "load check         1 of 2 cached libraries load" in done.stdout, done.stdout
    assert "PROBLEM: a cached library does not load: aot_aborts/" in done.stdout
    assert "loading it ended the process" in done.stdout


def test_cache_list_info_clear(fresh_cache: Path) -> None:
    brainevent.load_cpp_inline(name="cli_one", cpp_sources=KERNEL, auto_register=False)
    brainevent.load_cpp_inline(name="cli_two", cpp_sources=KERNEL, auto_register=False)
    env = {"BRAINEVENT_CACHE_DIR": str(fresh_cache)}
    listing = _cli("cache", "list", env=env)
    assert listing.returncode == 0 and "cli_one/" in listing.stdout and "cli_two/" in listing.stdout
    assert "2 entries" in listing.stdout
    info = _cli("cache", "info", "cli_one", env=env)
    assert "function    negate: arg ret" in info.stdout and "platform    cpu" in info.stdout
    assert _cli("cache", "info", "nope", env=env).returncode == 1
    cleared = _cli("cache", "clear", "cli_one", env=env)
    assert "removed 1 entries" in cleared.stdout
    assert "cli_one/" not in _cli("cache", "list", env=env).stdout
    everything = _cli("cache", "clear", env=env)  # no name: a script must say --all
    assert everything.returncode == 2 and "--all" in everything.stderr, everything.stderr
    assert "cli_two/" in _cli("cache", "list", env=env).stdout  # nothing was removed
    assert _cli("cache", "clear", "--all", env=env).stdout.startswith("removed 1 entries")


def test_cache_clear_without_a_name_asks_at_a_terminal(fresh_cache: Path) -> None:
    import pty

    brainevent.load_cpp_inline(name="ask_mod", cpp_sources=KERNEL, auto_register=False)
    env = dict(os.environ, PYTHONPATH=SRC, JAX_PLATFORMS="cpu")
    for answer, outcome in (("n", "name a module, or --all"), ("y", "removed 1 entries")):
        main, terminal = pty.openpty()
        command = [sys.executable, "-m", "brainevent", "cache", "clear"]
        done = subprocess.Popen(command, stdin=terminal, stdout=terminal, stderr=terminal, env=env)
        os.close(terminal)
        seen = b""
        while b"[y/N]" not in seen:
            seen += os.read(main, 1024)
        assert f"remove every entry under {fresh_cache}?".encode() in seen, seen
        os.write(main, f"{answer}\n".encode())
        assert done.wait(timeout=120) == (2 if answer == "n" else 0)
        with contextlib.suppress(OSError):  # the terminal closes when the process ends
            while chunk := os.read(main, 1024):
                seen += chunk
        os.close(main)
        assert outcome.encode() in seen, seen
    assert "ask_mod/" not in _cli("cache", "list").stdout


def test_cache_dir_that_does_not_exist_is_flagged(tmp_path: Path) -> None:
    missing = tmp_path / "no_such_cache"
    for command in (["list"], ["info", "m"], ["clear", "--all"], ["prune"]):
        done = _cli("cache", *command, "--cache-dir", str(missing))
        assert done.returncode == 1, done.stdout + done.stderr
        assert f"--cache-dir {missing} does not exist" in done.stderr, done.stderr
    assert not missing.exists()
    # The default root not created yet is an empty cache, and says so.
    done = _cli("cache", "list", env={"BRAINEVENT_CACHE_DIR": str(missing)})
    assert done.returncode == 0 and "not created yet" in done.stdout, done.stdout


def test_help_is_plain_text_and_describes_every_argument() -> None:
    top = _cli("--help").stdout
    assert "``" not in top and ":func:" not in top and "C++ and CUDA kernels" in top, top
    clear = _cli("cache", "clear", "--help").stdout
    assert "the module whose entries go" in clear and "--all" in clear, clear
    assert "remove one module's entries, or all of them" in clear, clear  # the command's description
    import argparse

    from brainevent.cli import _parser

    parsers = [_parser()]
    for parser in parsers:  # every command's positional arguments have a line of help
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
            elif not action.option_strings:
                assert action.help, (parser.prog, action.dest)


HOLD_LOCK = textwrap.dedent(
    """
    import sys, time, filelock
    lock = filelock.FileLock(sys.argv[1]); lock.acquire()
    print("held", flush=True); time.sleep(float(sys.argv[2]))
    """
)


def test_prune_respects_limits_while_another_process_holds_an_entry(fresh_cache: Path) -> None:
    mods = [
        brainevent.load_cpp_inline(name=f"prune_{i}", cpp_sources=KERNEL, auto_register=False)
        for i in range(3)
    ]
    for i, mod in enumerate(mods):  # prune_0 is the least recently used
        os.utime(mod.cache_dir, (time.time() - 1000 + i, time.time() - 1000 + i))
    held = mods[0].cache_dir.parent / f"{mods[0].cache_dir.name}.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(held), "60"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        from brainevent.cache.admin import iter_entries

        sizes = {e.module: e.size for e in iter_entries(fresh_cache)}
        limit = sizes["prune_0"] + sizes["prune_2"]  # room for two entries, cached objects dropped
        done = _cli(
            "cache", "prune", "--max-size", str(limit), env={"BRAINEVENT_CACHE_DIR": str(fresh_cache)}
        )
        assert done.returncode == 0, done.stderr
        assert "1 skipped (being built)" in done.stdout
    finally:
        holder.kill()
        holder.wait()
    assert mods[0].cache_dir.is_dir()  # locked: kept
    assert not mods[1].cache_dir.exists()  # next least recently used: removed
    assert mods[2].cache_dir.is_dir()  # the limit was met with it kept
    done = _cli("cache", "prune", "--older-than", "1s", env={"BRAINEVENT_CACHE_DIR": str(fresh_cache)})
    assert "removed 2 entries" in done.stdout


def test_prune_without_arguments_keeps_the_newest_version_of_each_build(fresh_cache: Path) -> None:
    """Three edits of one module leave four entries; a bare prune keeps the latest (and the O1 build)."""
    versions = [KERNEL.replace("-x.data_ptr", f"-{1 + i}.0f * x.data_ptr") for i in range(4)]
    mods = [
        brainevent.load_cpp_inline(name="edited", cpp_sources=src, auto_register=False) for src in versions
    ]
    o1 = brainevent.load_cpp_inline(
        name="edited", cpp_sources=versions[0], optimization_level=1, auto_register=False
    )
    now = time.time()
    for age, mod in zip((400, 300, 200, 100, 500), [*mods, o1], strict=True):  # o1: least recently used
        os.utime(mod.cache_dir, (now - age, now - age))
    env = {"BRAINEVENT_CACHE_DIR": str(fresh_cache)}
    assert "5 entries" in _cli("cache", "list", env=env).stdout
    done = _cli("cache", "prune", env=env)
    assert done.returncode == 0, done.stderr
    assert "--keep-newest 1" in done.stdout and "removed 3 entries" in done.stdout
    assert [m.cache_dir.is_dir() for m in mods] == [False, False, False, True]
    assert o1.cache_dir.is_dir()  # another build of the module (its options differ), kept
    again = brainevent.load_cpp_inline(name="edited", cpp_sources=versions[3], auto_register=False)
    assert not again.built_now and again.cache_dir == mods[3].cache_dir


def test_prune_without_arguments_removes_damaged_entries(fresh_cache: Path) -> None:
    mod = brainevent.load_cpp_inline(name="damaged", cpp_sources=KERNEL, auto_register=False)
    (mod.cache_dir / "manifest.json").write_text("{truncated")
    env = {"BRAINEVENT_CACHE_DIR": str(fresh_cache)}
    assert "DAMAGED" in _cli("cache", "list", env=env).stdout
    done = _cli("cache", "prune", env=env)
    assert "removed 1 entries" in done.stdout and not mod.cache_dir.exists()


def test_prune_keep_newest_n(fresh_cache: Path) -> None:
    versions = [KERNEL.replace("-x.data_ptr", f"-{1 + i}.0f * x.data_ptr") for i in range(3)]
    mods = [brainevent.load_cpp_inline(name="kept", cpp_sources=src, auto_register=False) for src in versions]
    now = time.time()
    for age, mod in zip((30, 10, 20), mods, strict=True):  # most recently used: 1, then 2
        os.utime(mod.cache_dir, (now - age, now - age))
    env = {"BRAINEVENT_CACHE_DIR": str(fresh_cache)}
    done = _cli("cache", "prune", "--keep-newest", "2", env=env)
    assert done.returncode == 0 and "removed 1 entries" in done.stdout, done.stdout + done.stderr
    assert [m.cache_dir.is_dir() for m in mods] == [False, True, True]
    refused = _cli("cache", "prune", "--keep-newest", "0", env=env)
    assert refused.returncode == 2 and "--keep-newest 0: keep at least 1" in refused.stderr


def test_prune_rejects_bad_sizes(fresh_cache: Path) -> None:
    done = _cli("cache", "prune", "--max-size", "lots", env={"BRAINEVENT_CACHE_DIR": str(fresh_cache)})
    assert done.returncode == 2 and "size 'lots' is not valid" in done.stderr


@pytest.mark.nvcc
def test_build_ahead_of_time_is_hit_by_a_later_inline_load(tmp_path: Path) -> None:
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "aot_ones.cu").write_text(CUDA_KERNEL)
    cache = tmp_path / "aot-cache"
    done = _cli(
        "build",
        str(kernels / "aot_ones.cu"),
        "--as-inline",
        "--arch",
        "sm_80",
        "--arch",
        "sm_90",
        "--cache-dir",
        str(cache),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("built: aot_ones (cuda)")
    mod = brainevent.load_cuda_inline(
        name="aot_ones",
        cuda_sources=CUDA_KERNEL,
        compute_capability=["sm_80", "sm_90"],
        build_directory=str(cache),
        auto_register=False,
    )
    assert not mod.built_now
    from brainevent.toolchain.fatbin import fatbin_entries

    assert {(e.kind, e.arch) for e in fatbin_entries(mod.path)} == {("sass", 80), ("sass", 90), ("ptx", 90)}


def test_lock_wait_is_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    log = tmp_path / "compiler.log"
    slow = tmp_path / "slow-g++"
    slow.write_text(f'#!/bin/sh\necho "$*" >> {log}\nsleep 3\nexec g++ "$@"\n')
    slow.chmod(0o755)
    env = {"BRAINEVENT_CXX": str(slow), "BRAINEVENT_CACHE_DIR": str(tmp_path / "cache")}
    loader = (
        "import sys, brainevent; brainevent.load_cpp_inline(name='waited', cpp_sources=sys.argv[1], "
        "auto_register=False)"
    )
    other = subprocess.Popen(
        [sys.executable, "-c", loader, KERNEL], env=dict(os.environ, PYTHONPATH=SRC, **env)
    )
    try:
        deadline = time.monotonic() + 60
        while not log.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.environ.update(env)
        from brainevent.toolchain.host import clear_cache

        clear_cache()
        with caplog.at_level(logging.INFO, logger="brainevent"):
            mod = brainevent.load_cpp_inline(name="waited", cpp_sources=KERNEL, auto_register=False)
    finally:
        for key in env:
            os.environ.pop(key, None)
        from brainevent.toolchain.host import clear_cache

        clear_cache()
        other.wait(timeout=120)
    assert not mod.built_now
    assert "waiting for the build lock of waited" in caplog.text and f"pid {other.pid}" in caplog.text


@pytest.mark.parametrize(
    "where",
    [
        ["--cache-dir", "{d}", "cache", "list"],
        ["cache", "--cache-dir", "{d}", "list"],
        ["cache", "list", "--cache-dir", "{d}"],
    ],
    ids=["before-command", "after-command", "after-subcommand"],
)
def test_cache_dir_is_accepted_anywhere(fresh_cache: Path, tmp_path: Path, where: list[str]) -> None:
    other = tmp_path / "other-cache"
    brainevent.load_cpp_inline(
        name="anywhere_mod", cpp_sources=KERNEL, build_directory=str(other), auto_register=False
    )
    done = _cli(*[w.format(d=other) for w in where])
    assert done.returncode == 0, done.stderr
    assert f"cache: {other}" in done.stdout and "anywhere_mod/" in done.stdout, done.stdout


def test_cache_clear_of_an_unknown_module_fails(fresh_cache: Path) -> None:
    brainevent.load_cpp_inline(name="clear_kept_mod", cpp_sources=KERNEL, auto_register=False)
    done = _cli("cache", "clear", "clear_kept_mdo", env={"BRAINEVENT_CACHE_DIR": str(fresh_cache)})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no cached module 'clear_kept_mdo'" in done.stderr and "nothing removed" in done.stderr
    assert "clear_kept_mod" in done.stderr  # the cached modules are listed
    listed = _cli("cache", "list", env={"BRAINEVENT_CACHE_DIR": str(fresh_cache)})
    assert "clear_kept_mod/" in listed.stdout


def test_build_without_a_gpu_names_the_arch_option(tmp_path: Path) -> None:
    from brainevent.toolchain.cuda_driver import probe_devices

    if probe_devices().devices:
        pytest.skip("not applicable: a GPU is present, so no architecture is missing")
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc to reach the architecture check")
    kernel = tmp_path / "ones.cu"
    kernel.write_text(CUDA_KERNEL)
    env = {"BRAINEVENT_CUDA_ARCH": "", "BRAINEVENT_CACHE_DIR": str(tmp_path / "cache")}
    done = _cli("build", str(kernel), env=env)
    assert done.returncode == 1
    assert "--arch sm_90" in done.stderr and "compute_capability=" not in done.stderr, done.stderr


@pytest.mark.nvcc
def test_build_with_a_bad_arch_answers_in_cli_terms(tmp_path: Path) -> None:
    kernel = tmp_path / "ones.cu"
    kernel.write_text(CUDA_KERNEL)
    done = _cli("build", str(kernel), "--arch", "sm_xx", env={"BRAINEVENT_CACHE_DIR": str(tmp_path / "c")})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "--arch 'sm_xx' is not valid" in done.stderr and "--arch sm_86" in done.stderr, done.stderr
    assert "compute_capability=" not in done.stderr, done.stderr


@pytest.mark.nvcc
def test_doctor_without_a_gpu_says_cuda_builds_need_an_arch(tmp_path: Path) -> None:
    from brainevent.toolchain.cuda_driver import probe_devices

    if probe_devices().devices:
        pytest.skip("not applicable: a GPU is present")
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc: doctor reports no CUDA builds at all")
    done = _cli("doctor", env={"BRAINEVENT_CUDA_ARCH": "", "BRAINEVENT_CACHE_DIR": str(tmp_path)})
    verdict = done.stdout.split("Verdict")[-1]
    assert "CUDA builds work when given an architecture" in verdict, done.stdout
    assert "BRAINEVENT_CUDA_ARCH=sm_90" in verdict and "--arch sm_90" in verdict


@pytest.mark.host
def test_doctor_verdict_says_whether_cuda_kernel_works(monkeypatch: pytest.MonkeyPatch) -> None:
    from brainevent import doctor
    from brainevent.errors import ToolchainError
    from brainevent.nvrtc.process import nvrtc_info

    try:
        version = "NVRTC {}.{} found".format(*nvrtc_info().version)
    except ToolchainError:
        version = None
    verdict = "\n".join(doctor.run_doctor(compile_checks=False).lines).split("Verdict")[-1]
    if version is not None:
        assert f"cuda_kernel works: {version}" in verdict, verdict

    # Where libnvrtc cannot be used, the verdict says so.
    def no_nvrtc() -> None:
        raise ToolchainError("libnvrtc was not found")

    monkeypatch.setattr(doctor, "nvrtc_info", no_nvrtc)
    verdict = "\n".join(doctor.run_doctor(compile_checks=False).lines).split("Verdict")[-1]
    assert "cuda_kernel does not work here: no usable NVRTC" in verdict, verdict
