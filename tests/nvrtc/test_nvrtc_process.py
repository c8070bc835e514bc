"""NVRTC runs in a worker process of its own, through the one compile runner: a hit never
loads NVRTC; BRAINEVENT_COMPILE_TIMEOUT and Ctrl-C stop a compile within about a second,
leaving no process, staging directory or held lock behind; a crash, a full disk, an old
libnvrtc and damaged entries are typed errors or rebuilds."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from brainevent.errors import CacheError, CompileError, ToolchainError

from .kernels import VECTOR_ADD, slow_kernel

SRC = str(Path(__file__).resolve().parents[2] / "src")
ELF = b"\x7fELF"


@pytest.fixture(scope="module", autouse=True)
def _nvrtc() -> None:
    import brainevent.nvrtc as nv

    try:
        nv.compile(VECTOR_ADD, "add", "sm_80")
    except ToolchainError as exc:  # the test extra installs nvidia-cuda-nvrtc
        pytest.skip(f"needs libnvrtc (pip install nvidia-cuda-nvrtc): {exc}")


def _env(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=SRC, JAX_PLATFORMS="cpu", **extra)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(p) for p in (task / "children").read_text().split()]
    return found


# What a fresh process reports after a hit: which NVRTC libraries it maps, whether it started
# a process (NVRTC's worker), whether it imported cuda-pathfinder.
AFTER_HIT = r"""
import json, os, sys
from pathlib import Path
def nvrtc_maps():
    maps = {os.path.basename(l.split()[-1]) for l in open("/proc/self/maps") if "/" in l}
    return {m for m in maps if m.startswith("libnvrtc")}
BEFORE = set()  # mapped before the hit (JAX's CUDA plugin preloads libnvrtc where it is installed)
def report(result_ok):
    children = [c for t in Path("/proc/self/task").iterdir() for c in (t / "children").read_text().split()]
    print(json.dumps({"ok": result_ok, "nvrtc": sorted(nvrtc_maps() - BEFORE),
                      "children": children, "pathfinder": "cuda.pathfinder" in sys.modules}))
"""

HIT_COMPILE = (
    AFTER_HIT
    + r"""
import brainevent.nvrtc as nv
out = nv.compile(sys.argv[2], "add", "sm_80", build_directory=sys.argv[1])
report(out.code[:4] == b"\x7fELF")
"""
)

HIT_LOWER = (
    AFTER_HIT
    + r"""
import jax, numpy as np, brainevent
jax.devices()
BEFORE = nvrtc_maps()
spec = jax.ShapeDtypeStruct((1024,), np.float32)
add = brainevent.cuda_kernel(sys.argv[2], "add", spec, launch_dims=lambda x, y: x.size,
                             n=lambda x, y: x.size, compute_capability="sm_80")
text = jax.jit(add).trace(spec, spec).lower(lowering_platforms=("cuda",)).as_text()
report("stablehlo.custom_call" in text or "custom_call" in text)
"""
)


@pytest.mark.host  # lowering a cuda_kernel call builds its cubin launcher with g++
@pytest.mark.parametrize("script", [HIT_COMPILE, HIT_LOWER], ids=["nvrtc.compile", "cuda_kernel lowered"])
def test_a_hit_in_a_fresh_process_neither_loads_nor_starts_nvrtc(tmp_path: Path, script: str) -> None:
    cache = str(tmp_path / "cache")
    env = _env(BRAINEVENT_CACHE_DIR=cache)
    for _attempt in ("miss", "hit"):
        done = subprocess.run(
            [sys.executable, "-c", script, cache, VECTOR_ADD],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
    after = json.loads(done.stdout.strip().splitlines()[-1])
    assert after["ok"]
    assert after == {"ok": True, "nvrtc": [], "children": [], "pathfinder": False}, after


TIMED = r"""
import json, sys, time
import brainevent.nvrtc as nv
from brainevent.errors import CompileError
source, names = json.loads(sys.argv[2])
started = time.monotonic()
try:
    nv.compile(source, names, "sm_80", build_directory=sys.argv[1])
    print(json.dumps({"error": None, "seconds": time.monotonic() - started}))
except CompileError as exc:
    from pathlib import Path
    children = [c for t in Path("/proc/self/task").iterdir() for c in (t / "children").read_text().split()]
    print(json.dumps({"error": str(exc), "timed_out": exc.data.get("timed_out"),
                      "seconds": time.monotonic() - started, "children": children}))
"""


def _left_behind(cache: Path) -> list[str]:
    """Staging directories or entries in the NVRTC store, and whether an entry's lock is held."""
    import filelock

    store = cache / "v1" / "nvrtc"
    left = [p.name for p in store.iterdir() if p.is_dir()] if store.is_dir() else []
    for lock in store.glob("*.lock") if store.is_dir() else []:
        try:
            filelock.FileLock(str(lock)).acquire(timeout=0).lock.release()
        except filelock.Timeout:
            left.append(f"{lock.name} (held)")
    return left


def test_a_compile_past_the_timeout_is_stopped_leaving_nothing(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    done = subprocess.run(
        [sys.executable, "-c", TIMED, str(cache), json.dumps(slow_kernel())],
        env=_env(BRAINEVENT_COMPILE_TIMEOUT="2"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["error"] is not None and result["timed_out"], result
    assert "BRAINEVENT_COMPILE_TIMEOUT" in result["error"], result["error"]
    assert result["seconds"] < 6, f"stopped {result['seconds']:.1f} s after it started (timeout 2 s)"
    assert result["children"] == [], "NVRTC's process outlived its compile"
    assert _left_behind(cache) == []


INTERRUPTED = r"""
import json, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
import brainevent.nvrtc as nv
source, names = json.loads(sys.argv[2])
print("compiling", flush=True)
nv.compile(source, names, "sm_80", build_directory=sys.argv[1])
"""


def test_ctrl_c_stops_an_nvrtc_compile_within_a_second(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    child = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED, str(cache), json.dumps(slow_kernel())],
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert child.stdout is not None and child.stdout.readline().strip() == "compiling"
    time.sleep(3)  # well into the compile (about 17 s)
    workers = _children(child.pid)
    sent = time.monotonic()
    child.send_signal(signal.SIGINT)
    try:
        _out, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()
        raise AssertionError("no exit 60 s after SIGINT") from None
    waited = time.monotonic() - sent
    assert "KeyboardInterrupt" in err, err[-2000:]
    assert waited < 1.5, f"Ctrl-C was seen {waited:.1f} s after it was pressed"
    time.sleep(0.2)
    assert not [p for p in workers if _alive(p)], "NVRTC's process outlived the interrupted compile"
    assert _left_behind(cache) == []


def test_a_crash_of_nvrtc_is_a_toolchain_error_and_the_next_compile_works(tmp_path: Path) -> None:
    import threading

    import brainevent.nvrtc as nv

    source, names = slow_kernel()

    def crash_the_worker() -> None:
        time.sleep(1.5)
        for pid in _children(os.getpid()):
            os.kill(pid, signal.SIGSEGV)

    killer = threading.Thread(target=crash_the_worker)
    killer.start()
    try:
        with pytest.raises(ToolchainError, match="NVRTC's process ended") as caught:
            nv.compile(source, names, "sm_80", build_directory=str(tmp_path))
    finally:
        killer.join()
    assert "SIGSEGV" in str(caught.value)
    assert _left_behind(tmp_path) == []
    again = nv.compile(VECTOR_ADD, "add", "sm_80", build_directory=str(tmp_path))
    assert again.code[:4] == ELF


def test_a_cu_file_with_a_latin1_byte_is_compiled_as_its_bytes(tmp_path: Path) -> None:
    import brainevent.nvrtc as nv

    path = tmp_path / "latin1.cu"
    path.write_bytes(b"// caf\xe9\n" + VECTOR_ADD.encode())
    out = nv.compile(path, "add", "sm_80", build_directory=str(tmp_path / "cache"))
    assert out.code[:4] == ELF and out.lowered == {"add": "add"}


def test_a_compile_error_in_a_latin1_file_quotes_its_line(tmp_path: Path) -> None:
    import brainevent.nvrtc as nv

    path = tmp_path / "latin1.cu"
    path.write_bytes(b'// caf\xe9\nextern "C" __global__ void add(float* o) { o[0] = oops; }\n')
    with pytest.raises(CompileError, match=r"latin1\.cu, line 2: error") as caught:
        nv.compile(path, "add", "sm_80", build_directory=str(tmp_path / "cache"))
    assert "o[0] = oops;" in str(caught.value)


@pytest.fixture
def small_fs(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A 4 MiB tmpfs of its own (root only)."""
    if os.getuid() != 0:
        pytest.skip("not applicable: mounting a tmpfs needs root")
    where = tmp_path / "mnt"
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode()[:200]}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_full_disk_during_an_nvrtc_build_is_a_cache_error_leaving_nothing(small_fs: Path) -> None:
    import brainevent.nvrtc as nv

    cache = small_fs / "cache"
    nv.compile(VECTOR_ADD, "add", "sm_80", build_directory=str(cache))  # the store's directories exist
    with open(small_fs / "filler", "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass
    before = sorted(p.name for p in (cache / "v1" / "nvrtc").iterdir())
    with pytest.raises(CacheError, match="full") as caught:
        nv.compile(VECTOR_ADD, "add", "sm_90", build_directory=str(cache))
    assert caught.value.data.get("disk_full")
    after = sorted(p.name for p in (cache / "v1" / "nvrtc").iterdir())
    assert [n for n in after if n not in before and not n.endswith((".lock", ".owner"))] == []
    (small_fs / "filler").unlink()
    assert nv.compile(VECTOR_ADD, "add", "sm_90", build_directory=str(cache)).code[:4] == ELF


# ---- damaged entries: rebuilt, with the warning docs/caching.md promises ----


def _entry(cache: Path) -> Path:
    (entry,) = [p for p in (cache / "v1" / "nvrtc").iterdir() if p.is_dir() and not p.name.startswith(".")]
    return entry


def _edit_manifest(entry: Path, **inputs: object) -> None:
    manifest = entry / "manifest.json"
    data = json.loads(manifest.read_text())
    data["inputs"].update(inputs)
    manifest.write_text(json.dumps(data))


DAMAGE = {
    "lowered is a list": lambda entry: _edit_manifest(entry, lowered=["add"]),
    "lowered is empty": lambda entry: _edit_manifest(entry, lowered={}),
    "lowered names another kernel": lambda entry: _edit_manifest(entry, lowered={"sub": "sub"}),
    "kind is unknown": lambda entry: _edit_manifest(entry, kind="fatbin"),
    "manifest missing": lambda entry: (entry / "manifest.json").unlink(),
    "manifest truncated": lambda entry: (entry / "manifest.json").write_text(
        (entry / "manifest.json").read_text()[:40]
    ),
    "cubin deleted": lambda entry: (entry / "kernel.cubin").unlink(),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_entry_is_rebuilt_with_a_warning(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    from brainevent.nvrtc.cache import Request, compile_cached, forget_process_memo
    from brainevent.nvrtc.source import KernelSource

    request = Request(KernelSource.read(VECTOR_ADD), ("add",), "sm_80")
    first, _ = compile_cached(request, build_directory=str(tmp_path))
    DAMAGE[damage](_entry(tmp_path))
    forget_process_memo()
    with caplog.at_level(logging.WARNING, logger="brainevent.cache"):
        again, built = compile_cached(request, build_directory=str(tmp_path))
    assert built and again.lowered == {"add": "add"} and again.code == first.code
    assert any("is damaged" in r.getMessage() and "rebuilt" in r.getMessage() for r in caplog.records), [
        r.getMessage() for r in caplog.records
    ]


@pytest.mark.host  # the cuda_kernel's lowering builds its cubin launcher with g++
def test_a_damaged_lowered_field_is_a_rebuild_for_cuda_kernel_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import jax
    import numpy as np

    import brainevent
    from brainevent.nvrtc.cache import forget_process_memo

    spec = jax.ShapeDtypeStruct((1024,), np.float32)

    def lower() -> str:
        add = brainevent.cuda_kernel(
            VECTOR_ADD, "add", spec, launch_dims=lambda x, y: x.size, n=lambda x, y: x.size,
            compute_capability="sm_80",
        )  # fmt: skip
        return str(jax.jit(add).trace(spec, spec).lower(lowering_platforms=("cuda",)).as_text())

    monkeypatch.setenv("BRAINEVENT_CACHE_DIR", str(tmp_path))
    lower()
    _edit_manifest(_entry(tmp_path), lowered=[])
    forget_process_memo()
    assert "custom_call" in lower()


# A libnvrtc of an older CUDA, as far as the worker can tell: it reports VERSION and has every
# function brainevent calls except, without HAS_CUBIN, the cubin readers (CUDA 11.1's).
OLD_NVRTC = r"""
extern "C" {
int nvrtcVersion(int* major, int* minor) { *major = MAJOR; *minor = MINOR; return 0; }
const char* nvrtcGetErrorString(int) { return "NVRTC_ERROR_OLD"; }
int nvrtcCreateProgram(void**, const char*, const char*, int, const char**, const char**) { return 0; }
int nvrtcDestroyProgram(void**) { return 0; }
int nvrtcCompileProgram(void*, int, const char**) { return 0; }
int nvrtcAddNameExpression(void*, const char*) { return 0; }
int nvrtcGetLoweredName(void*, const char*, const char**) { return 0; }
int nvrtcGetProgramLogSize(void*, unsigned long*) { return 0; }
int nvrtcGetProgramLog(void*, char*) { return 0; }
int nvrtcGetPTXSize(void*, unsigned long*) { return 0; }
int nvrtcGetPTX(void*, char*) { return 0; }
#ifdef HAS_CUBIN
int nvrtcGetCUBINSize(void*, unsigned long*) { return 0; }
int nvrtcGetCUBIN(void*, char*) { return 0; }
#endif
}
"""


@pytest.mark.host
@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (
            ["-DMAJOR=11", "-DMINOR=0"],
            r"lacks nvrtcGetCUBIN \(CUDA 11\.1\), nvrtcGetCUBINSize \(CUDA 11\.1\)",
        ),
        (
            ["-DMAJOR=12", "-DMINOR=4", "-DHAS_CUBIN"],
            r"is NVRTC 12\.4: brainevent compiles with NVRTC 12\.8 or newer",
        ),
    ],
    ids=["lacking a function", "too old"],
)
def test_an_old_libnvrtc_is_a_toolchain_error_naming_the_release_needed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: list[str], expected: str
) -> None:
    import brainevent.nvrtc as nv
    from brainevent.nvrtc import process
    from brainevent.nvrtc.toolkit import Located

    (tmp_path / "old.cpp").write_text(OLD_NVRTC)
    library = tmp_path / "libnvrtc.so.11"
    subprocess.run(
        ["g++", "-shared", "-fPIC", *flags, "-o", str(library), str(tmp_path / "old.cpp")], check=True
    )
    monkeypatch.setattr(process, "locate_nvrtc", lambda: Located(str(library), "CUDA_HOME"))
    monkeypatch.setattr(process, "_worker", None)  # this process's worker comes back afterwards
    with pytest.raises(ToolchainError, match=expected) as caught:
        nv.compile(VECTOR_ADD, "add", "sm_80", build_directory=str(tmp_path / "cache"))
    assert str(library) in str(caught.value) and "pip install" in str(caught.value)
    assert _left_behind(tmp_path / "cache") == []
