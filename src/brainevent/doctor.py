"""`brainevent doctor`: what this machine can build and run, and why not, each component with its
version and how it was found, each claim proven by a real compile; exit status 1 when the stack
cannot compile what it claims to (a chosen compiler or nvcc that fails)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from . import config
from ._version import __version__
from .backends import installed_version
from .build.ninja import ninja_executable
from .build.runner import ProcessJob, supervise
from .cache import cache_root
from .cache.admin import EntryInfo, iter_entries, object_cache_size
from .cuda_graphs import capture_status
from .errors import BrainEventError, CompileError
from .fileio import atomic_write
from .headers import INCLUDE_DIR, c_api_digest, xla_include_dir
from .nvrtc.compiler import base_options, compile_source
from .nvrtc.process import nvrtc_info
from .nvrtc.toolkit import runtime_include_dirs
from .platform_table import HOST_PLATFORM
from .runtime.targets import list_registered_targets
from .toolchain.cuda_driver import probe_devices
from .toolchain.host import find_host_compiler
from .toolchain.host_compat import check_host_compiler, host_compiler_version
from .toolchain.nvcc import CU12_HINT, check_jax_plugin_match, find_nvcc, installed_jax_cuda_plugins


@dataclass
class Report:
    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    cannot_build: list[str] = field(default_factory=list)  # what this node cannot build, and why
    require_build: bool = False

    def section(self, title: str) -> None:
        self.lines.append(f"\n{title}")

    def item(self, label: str, value: str) -> None:
        self.lines.append(f"  {label:<18} {value}")

    def problem(self, text: str) -> None:
        self.problems.append(text)
        self.lines.append(f"  PROBLEM: {text}")

    @property
    def exit_code(self) -> int:
        return 1 if self.problems or (self.require_build and self.cannot_build) else 0


_SMOKE_CPP = (
    '#include "brainevent/common.h"\nint be_doctor_probe(const BE::Tensor& t) { return (int)t.numel(); }\n'
)
_KERNEL = "__global__ void be_doctor_kernel(float* p) { p[threadIdx.x] = 1.0f; }\n"
_SMOKE_CU = f'#include <cuda_runtime.h>\n#include "brainevent/common.h"\n{_KERNEL}'


def _smoke_compile(report: Report, command: list[str], source: str, suffix: str, ok: str, fails: str) -> bool:
    """Whether the compiler turns a tiny source into an object; if not a PROBLEM: ``fails`` and why."""
    with tempfile.TemporaryDirectory() as tmp:
        atomic_write(Path(tmp, f"probe{suffix}"), source)
        command = [*command, "-I", str(INCLUDE_DIR), "-c", f"{tmp}/probe{suffix}", "-o", f"{tmp}/probe.o"]
        try:
            job = supervise(lambda: ProcessJob(command, Path(tmp)), f"the smoke test ({command[0]})")
            lines = job.output().strip().splitlines()
            failure = None if job.returncode == 0 else (lines or [f"exit status {job.returncode}"])[-1]
        except (OSError, CompileError) as exc:
            failure = str(exc)
    if failure is not None:
        report.problem(f"{fails}: {failure}")
    else:
        report.item("smoke compile", ok)
    return failure is None


# dlopen runs a library's constructors: a sanitizer build or a broken one can abort the
# process that loads it, so the load check loads each library in a child, one per line.
_LOAD_CHILD = """
import ctypes, sys
for path in sys.argv[1:]:
    try:
        ctypes.CDLL(path)
        print("ok", flush=True)
    except OSError as exc:
        print(str(exc).replace(chr(10), " "), flush=True)
"""


def _load_check(report: Report, entries: list[EntryInfo], gpu_present: bool) -> None:
    """dlopen each intact cached library this node could use: what a load-only node relies on."""
    usable = [
        (e, str(e.directory / e.manifest.artifact))
        for e in entries
        if e.manifest is not None and (e.manifest.platform == HOST_PLATFORM or gpu_present)
    ]
    if not usable:
        report.item("load check", "no ahead-of-time builds to load (fill the cache with `brainevent build`)")
        return
    failed, pending = [], usable
    while pending:
        command = [sys.executable, "-c", _LOAD_CHILD, *(path for _, path in pending)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        answers = done.stdout.splitlines()
        if len(answers) < len(pending):  # the child died while loading the next one
            tail = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
            answers.append(f"loading it ended the process ({tail[0]})")
        for (entry, _), answer in zip(pending, answers, strict=False):
            if answer != "ok":
                failed.append(f"{entry.module}/{entry.directory.name}: {answer}")
        pending = pending[len(answers) :]
    report.item("load check", f"{len(usable) - len(failed)} of {len(usable)} cached libraries load")
    for failure in failed:
        report.problem(f"a cached library does not load: {failure}")


def _libraries_section(report: Report) -> None:
    """What cuda-pathfinder finds (and loads) of the libraries ``extra_libraries`` often names."""
    report.section("NVIDIA libraries (cuda-pathfinder, for extra_libraries=)")
    try:
        from cuda.pathfinder import __version__ as pathfinder_version

        from .toolchain.nvidia_libs import survey
    except ImportError as exc:
        report.item(
            "cuda-pathfinder",
            f"not installed ({exc}); extra_libraries= needs it: pip install cuda-pathfinder",
        )
        return
    report.item("cuda-pathfinder", pathfinder_version)
    for name, found in survey():
        report.item(name, found)


def _nvrtc_section(report: Report, compile_checks: bool, gpu_present: bool) -> str:
    """Which libnvrtc ``brainevent.cuda_kernel`` compiles with, and what still needs nvcc;
    returns the verdict's line on cuda_kernel."""
    report.section("NVRTC (brainevent.cuda_kernel, no nvcc)")
    try:
        bound = nvrtc_info()
    except BrainEventError as exc:
        report.item("libnvrtc", f"not usable: {exc.message.splitlines()[0]}")
        return "cuda_kernel does not work here: no usable NVRTC (see the NVRTC section)"
    found = "NVRTC {}.{} found".format(*bound.version)
    report.item("libnvrtc", f"{bound.path} ({found[:-6]}, its own process)")
    report.item("found_via", bound.found_via)
    report.item(
        "runtime headers",
        ", ".join(runtime_include_dirs()) or "not found (kernels that include none still compile)",
    )
    report.item(
        "needs nvcc",
        "no for cuda_kernel's kernels and the launcher that runs them (host compiler); "
        "yes for load_cuda_* host code",
    )
    if compile_checks:
        try:
            with tempfile.TemporaryDirectory() as scratch:
                source, options = f'extern "C" {_KERNEL}'.encode(), base_options("sm_80", [])
                compiled, log, _ = compile_source(
                    source, "doctor.cu", ["be_doctor_kernel"], "sm_80", options, Path(scratch)
                )
        except BrainEventError as exc:
            compiled, log = None, str(exc)
        report.item(
            "smoke compile", "ok (sm_80 cubin)" if compiled is not None else f"FAILED: {log.strip()[:200]}"
        )
        if compiled is None:
            return f"cuda_kernel does not work here: {found}, but it cannot compile a kernel"
    return f"cuda_kernel works: {found}" + ("" if gpu_present else " (kernels compile here, run on a GPU)")


def run_doctor(*, compile_checks: bool = True, require_build: bool = False) -> Report:
    report = Report(require_build=require_build)
    report.section("Python and JAX")
    report.item("python", f"{platform.python_version()} ({sys.executable})")
    report.item("platform", f"{platform.system()} {platform.machine()}")
    report.item("brainevent", __version__)
    plugins = installed_jax_cuda_plugins()
    for dist in ("jax", "jaxlib", *plugins, "numba", "numba-cuda"):
        if (version := installed_version(dist)) or dist in ("jax", "jaxlib"):
            report.item(dist, version or "not installed")

    report.section("Host C++ compiler")
    cxx = None
    try:
        cxx = find_host_compiler()
        kind, major = host_compiler_version(cxx.path)
        report.item("path", f"{os.path.realpath(cxx.path)} ({kind} {major})")
        report.item("found_via", cxx.found_via)
        report.item("searched", "; ".join(cxx.searched) or "-")
        if compile_checks:
            fails = "the host compiler cannot build a brainevent source"
            _smoke_compile(report, [*cxx.command, "-std=c++17"], _SMOKE_CPP, ".cpp", "ok", fails)
    except BrainEventError as exc:
        if config.CXX.get() or os.environ.get("CXX"):  # a choice that fails is broken
            report.problem(str(exc))
        else:
            report.item("compiler", exc.message.splitlines()[0])
            report.cannot_build.append(
                "C++ modules: no host compiler (install g++, e.g. apt-get install g++, or set CXX)"
            )

    report.section("XLA FFI headers")
    try:
        report.item("include dir", str(xla_include_dir()))
        report.item("c_api.h sha256", c_api_digest()[:16])
    except BrainEventError as exc:
        report.problem(str(exc))

    report.section("ninja")
    try:
        ninja = ninja_executable()
        done = subprocess.run([ninja, "--version"], capture_output=True, text=True, timeout=30)
        report.item("path", f"{ninja} ({done.stdout.strip()})")
    except (BrainEventError, OSError) as exc:
        report.problem(f"ninja: {exc}")

    report.section("GPUs (CUDA driver API)")
    probe = probe_devices()
    if probe.available and probe.devices:
        report.item("driver", str(probe.driver_version))
        for device in probe.devices:
            report.item(f"device {device.ordinal}", f"{device.name}, sm_{device.major}{device.minor}")
    else:
        report.item("devices", f"none ({probe.reason})")
    if hint := jax_cuda_plugin_without_gpu():
        report.item("note", hint)
    if (visible := os.environ.get("CUDA_VISIBLE_DEVICES")) is not None:
        report.item("CUDA_VISIBLE_DEVICES", repr(visible))
    if probe.devices:  # in this process; see docs/performance.md
        report.item("CUDA graphs", capture_status()[1])

    report.section("CUDA compiler (nvcc)")
    cuda_ok, nvcc_major = False, None
    try:
        nvcc = find_nvcc()
        nvcc_major = nvcc.version[0]
        report.item("path", f"{nvcc.path} (CUDA {nvcc.version_string})")
        report.item("found_via", nvcc.found_via)
        for candidate in nvcc.candidates:
            report.item("considered", f"{candidate.path} [{candidate.found_via}] {candidate.note}".rstrip())
        with warnings.catch_warnings(action="ignore"):  # said here instead
            mismatch = check_jax_plugin_match(nvcc)
        if mismatch:
            report.item("warning", mismatch)
        if cxx is None:
            report.item("smoke compile", "skipped: nvcc needs a host compiler and there is none")
            report.cannot_build.append("CUDA modules: nvcc needs a host compiler (install g++)")
        elif compile_checks:
            flags = [nvcc.path, "-std=c++17", "-gencode=arch=compute_80,code=sm_80"]
            try:
                flags += ["-ccbin", cxx.path, *check_host_compiler(nvcc, cxx.path)]
            except BrainEventError as exc:
                report.problem(str(exc))
            fails = "nvcc cannot build a CUDA source"
            cuda_ok = _smoke_compile(report, flags, _SMOKE_CU, ".cu", "ok (sm_80)", fails)
    except BrainEventError as exc:
        if config.NVCC.get() is not None:  # named explicitly but unusable: broken
            report.problem(f"{config.NVCC.name} is set, but no usable nvcc: {exc}")
        elif plugins or probe.devices:  # the stack claims CUDA
            why = "a JAX CUDA plugin is installed" if plugins else "a GPU is present"
            report.item("nvcc", f"not found ({why}): {exc.message.splitlines()[0]}")
            report.cannot_build.append(f"CUDA modules: {why}, but no nvcc was found")
        else:
            report.item("nvcc", f"not found (fine for CPU-only use): {exc.message.splitlines()[0]}")
    if "jax-cuda12-plugin" in plugins and nvcc_major != 12:
        report.item("note", CU12_HINT)

    _libraries_section(report)
    on_nvrtc = _nvrtc_section(report, compile_checks, bool(probe.devices))

    report.section("Kernel cache")
    root = cache_root()
    via = {"environment": f" (from {config.CACHE_DIR.name})", "set in code": " (set_cache_dir)"}
    report.item("directory", f"{root}{via.get(config.CACHE_DIR.source(), '')}")
    entries = list(iter_entries(root)) if root.is_dir() else []
    size = sum(e.size for e in entries) + (object_cache_size(root) if root.is_dir() else 0)
    modules = len({e.module for e in entries})
    report.item("contents", f"{len(entries)} entries of {modules} modules, {size / 2**20:.1f} MiB")
    damaged = sum(e.manifest is None for e in entries)
    if damaged:
        report.item("damaged", f"{damaged} (rebuilt on next load; `brainevent cache clear` removes them)")
    if shutil.disk_usage(root if root.exists() else Path.home()).free < 1 << 30:
        report.item("warning", "less than 1 GiB free where the cache lives")
    if report.cannot_build:
        _load_check(report, entries, bool(probe.devices))

    report.section("Verdict")
    if report.problems:
        verdict = f"{len(report.problems)} problem(s): fix them (each is marked PROBLEM above)."
    elif cxx is None:
        verdict = "load-only: OK. This node loads modules built ahead of time (`brainevent build`)."
    elif not cuda_ok:
        verdict = "ok: C++ builds work"
    elif probe.devices or config.CUDA_ARCH.get():
        verdict = "ok: C++ builds work, CUDA builds work"
    else:  # with no GPU (nor BRAINEVENT_CUDA_ARCH) a CUDA load must name its architecture
        verdict = (
            "ok: C++ builds work, CUDA builds work when given an architecture: no GPU here, so pass "
            'compute_capability="sm_90" to the loader (`brainevent build --arch sm_90`) or set '
            f"{config.CUDA_ARCH.name}=sm_90"
        )
    report.lines += [f"  {verdict}", f"  {on_nvrtc}", *(f"  cannot build {w}" for w in report.cannot_build)]
    if report.require_build and report.cannot_build:
        report.lines.append("  --require-build: this node must build, so the exit status is 1")
    return report


def print_diagnostics() -> None:
    """Print what this machine can build and run (``brainevent doctor`` without its test
    compiles) and the FFI targets registered in this process."""
    report = run_doctor(compile_checks=False)
    targets = list_registered_targets()
    report.section("Registered FFI targets")
    report.item("count", str(len(targets)))
    report.lines.extend(f"    {name}" for name in targets)
    print("brainevent diagnostics" + "\n".join(report.lines))


def jax_cuda_plugin_without_gpu() -> str | None:
    """How to silence a JAX CUDA plugin where the driver finds no GPU (it prints a long traceback
    whenever JAX starts), or None where that is not the situation."""
    if os.environ.get("JAX_PLATFORMS"):  # platforms chosen: the plugin starts only if asked for
        return None
    plugins = installed_jax_cuda_plugins()
    if not plugins or probe_devices().devices:
        return None
    return (
        f"{', '.join(plugins)} is installed but the CUDA driver finds no GPU, so JAX prints "
        "a 'Jax plugin configuration error' traceback ('Unable to load cuPTI') whenever it starts: "
        "set JAX_PLATFORMS=cpu to silence it on this machine"
    )
