"""Run the published brainevent 0.2.1's own kernel-toolchain tests against this project.

    python tests/compat/run021.py [--gpu] [--wheel PATH] [--workdir DIR] [--record] [-- PYTEST_ARGS]

Steps: download the 0.2.1 wheel (``pip download``, at run time: nothing of 0.2.1 is kept in
this repository), extract its ``brainevent/_op/*_test.py`` files of the kernel toolchain,
rewrite their ``brainevent`` imports (and nothing else) to this package's public names, write
a conftest that skips the tests of 0.2.1's private helpers (``NOT_APPLICABLE``, a reason each)
and marks the deliberate differences as expected failures (``DELIBERATE``, see
docs/compatibility.md), and run pytest on them. Without ``--gpu`` JAX runs on the CPU and the
GPU tests skip; with it they must find a GPU. ``--record`` writes the counts to
``docs/compatibility-results/<cpu|gpu>.json``, from which docs/compatibility.md's table of
last results is written (tests/docs check that the two agree).
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

VERSION = "0.2.1"
HERE = Path(__file__).resolve().parent

# The test files of the kernel toolchain (loaders, codegen, cache, runtime, Numba bridges,
# XLACustomKernel); the rest of 0.2.1's tests cover its sparse-operator library.
SUITES = (
    "kernix_cache_test.py",
    "kernix_codegen_test.py",
    "kernix_compiler_test.py",
    "kernix_pipeline_test.py",
    "kernix_runtime_test.py",
    "kernix_toolchain_test.py",
    "main_test.py",
    "numba_cuda_ffi_test.py",
    "numba_ffi_test.py",
    "util_test.py",
)

# Names 0.2.1 exports from ``brainevent`` for this subsystem: an import of one of them from
# a private module is rewritten to the public name.
PUBLIC = frozenset(
    {
        "XLACustomKernel",
        "KernelEntry",
        "BenchmarkConfig",
        "BenchmarkRecord",
        "BenchmarkResult",
        "benchmark_function",
        "numba_kernel",
        "numba_cuda_kernel",
        "numba_cuda_callable",
        "defjvp",
        "general_batching_rule",
        "jaxtype_to_warptype",
        "jaxinfo_to_warpinfo",
        "load_cuda_inline",
        "load_cuda_file",
        "load_cuda_dir",
        "load_cpp_inline",
        "load_cpp_file",
        "set_cache_dir",
        "get_cache_dir",
        "clear_cache",
        "print_diagnostics",
        "CompiledModule",
        "register_ffi_target",
        "list_registered_targets",
        "normalize_tokens",
        "CompilerBackend",
        "CUDABackend",
        "CPPBackend",
        "HIPBackend",
        "config",
        "get_registry",
        "get_primitives_by_tags",
        "get_all_primitive_names",
        "BrainEventError",
        "KernelError",
        "KernelNotAvailableError",
        "KernelCompilationError",
        "KernelFallbackExhaustedError",
        "KernelExecutionError",
        "KernelToolchainError",
        "CompilationError",
        "KernelRegistrationError",
        "BenchmarkDataFnNotProvidedError",
        "CUDANotInstalledError",
        "NvccNotFoundError",
        "HostCompilerNotFoundError",
        "HeaderNotFoundError",
        "GpuArchDetectionError",
        "HostCompilerIncompatibleError",
        "UnsupportedArchError",
        "KernelLoadError",
    }
)

# Public modules of 0.2.1 whose imports are kept as written.
PUBLIC_MODULES = frozenset({"brainevent", "brainevent.config"})

_PRIVATE_CACHE = "0.2.1's private CompilationCache class (its directory layout and key function)"
_PRIVATE_TOOLCHAIN = "0.2.1's private toolchain search functions and their data classes"

# Test-id prefixes (file::Class::test, relative to the extracted folder) -> why not applicable.
# A prefix ending in "::" or naming a whole file covers everything under it.
NOT_APPLICABLE: dict[str, str] = {
    # kernix_cache_test.py: every test drives CompilationCache directly.
    "kernix_cache_test.py": _PRIVATE_CACHE,
    # kernix_codegen_test.py
    "kernix_codegen_test.py::test_parse_annotations_": "0.2.1's private parse_annotations helper",
    # kernix_compiler_test.py: 0.2.1's compiler-backend objects and their private helpers.
    "kernix_compiler_test.py": "0.2.1's private compiler module (kernix_compiler: its _run, "
    "_raise_compile_error and backend command lines)",
    # kernix_pipeline_test.py
    "kernix_pipeline_test.py::test_cache_header_paths_cover_injected_headers": (
        "0.2.1's private _cache_header_paths helper"
    ),
    # kernix_runtime_test.py: registry internals (_LIVE_MODULES, _REGISTRATION_KEYS, the load
    # error formatter) and fake modules handed to them.
    "kernix_runtime_test.py": "0.2.1's private runtime module (kernix_runtime: its registry "
    "dictionaries, lock and load-error formatter)",
    # kernix_toolchain_test.py (but see APPLICABLE)
    "kernix_toolchain_test.py": _PRIVATE_TOOLCHAIN,
    # main_test.py
    "main_test.py::test_l3_apply_primitive_shim_is_xla_apply_primitive": (
        "0.2.1's private _compatible_import shim"
    ),
    "main_test.py::test_m13_warn_backend_once_deduplicates": "0.2.1's private _warn_backend_once",
    # numba_cuda_ffi_test.py
    "numba_cuda_ffi_test.py::TestComputeLaunchConfig::": "0.2.1's private _compute_launch_config",
    "numba_cuda_ffi_test.py::TestRegistrationCaching::": (
        "0.2.1's private target table _NUMBA_CUDA_FFI_TARGETS"
    ),
    "numba_cuda_ffi_test.py::TestImportNumbaCudaPoisoning::": "0.2.1's private import helper",
    "numba_cuda_ffi_test.py::TestNumbaCudaKernelXLAStream::": (
        "0.2.1's private get_xla_stream, patched to watch its per-call Python callback (here the "
        "launch runs in compiled code, with no Python per call)"
    ),
    "numba_cuda_ffi_test.py::TestTwoShapesOneTarget::": (
        "0.2.1's private target table _NUMBA_CUDA_FFI_TARGETS"
    ),
    "numba_cuda_ffi_test.py::TestContentDerivedNaming::": "0.2.1's private target naming helpers",
    # numba_ffi_test.py
    "numba_ffi_test.py::TestHelperFunctions::": "0.2.1's private buffer and shape helpers",
    "numba_ffi_test.py::TestNumbaCpuFfiHandler::": "0.2.1's private NumbaCpuFfiHandler class",
    "numba_ffi_test.py::TestXlaFfiAbiVersionCheck::": "0.2.1's private XLA FFI ABI version probe",
    "numba_ffi_test.py::TestBufferViewDtypes::": "0.2.1's private _numpy_from_buffer",
    "numba_ffi_test.py::test_metadata_struct_has_state_type_id": (
        "0.2.1's private ctypes mirror of the XLA FFI structs"
    ),
    "numba_ffi_test.py::TestRegistrationCaching::": "0.2.1's private handle table",
    "numba_ffi_test.py::TestShapeExcludedFromRegistrationKey::": "0.2.1's private handle table",
    "numba_ffi_test.py::TestContentDerivedNaming::": "0.2.1's private target naming helpers",
    "numba_ffi_test.py::TestContentFingerprintFallback::": "0.2.1's private target naming tables",
    "numba_ffi_test.py::TestKernelPinOnFingerprintReuse::": "0.2.1's private target naming tables",
    "numba_ffi_test.py::TestDispatcherAwareFingerprint::": ("0.2.1's private kernel_content_fingerprint"),
    "numba_ffi_test.py::TestHandlerSelfPin::": "0.2.1's private NumbaCpuFfiHandler class",
    "numba_ffi_test.py::TestResolveBufferDtypeRejections::": "0.2.1's private resolve_buffer_dtype",
    "numba_ffi_test.py::TestExtensionChainWalk::": "0.2.1's private ctypes call-frame decoder",
    "numba_ffi_test.py::TestXlaFfiErrorDestroyed::": "0.2.1's private ctypes XLA FFI API helpers",
    "numba_ffi_test.py::TestUnreportableFfiError::": "0.2.1's private error reporter",
    # util_test.py
    "util_test.py::test_dtype_suffix": "0.2.1's private dtype_suffix (of its operator library)",
    "util_test.py::test_spike_suffix": "0.2.1's private spike_suffix (of its operator library)",
}

# Tests under a NOT_APPLICABLE prefix that use only public names: they run.
APPLICABLE: tuple[str, ...] = ("kernix_toolchain_test.py::test_config_set_compute_capability_comma",)

_LIVE_RELOAD = (
    "loading changed source under a target name already registered re-points that target to "
    "the new code (0.2.1 refused it): docs/compatibility.md, 'Deliberate differences'"
)
_PLAIN_FUNCTIONS = (
    "numba_kernel compiles a plain Python function with numba.njit (0.2.1 raised TypeError): "
    "docs/compatibility.md, 'Deliberate differences'"
)

_SPECS_FIRST = (
    "entry points are found before anything is compiled: a function the source does not define "
    "is a SpecError naming it, not a compiler error: docs/compatibility.md, 'Deliberate differences'"
)

# Test-id prefixes -> the deliberate difference (docs/compatibility.md) that makes them fail.
DELIBERATE: dict[str, str] = {
    "kernix_codegen_test.py::test_compilation_error": _SPECS_FIRST,
    "kernix_pipeline_test.py::test_f12_stem_collision_without_replace_errors": _LIVE_RELOAD,
    "kernix_pipeline_test.py::test_f12_replace_refused_deterministically": _LIVE_RELOAD,
    "kernix_pipeline_test.py::test_f4_force_rebuild_new_code_via_distinct_name": _LIVE_RELOAD,
    "numba_ffi_test.py::TestNumbaKernelErrors::test_lambda_raises": _PLAIN_FUNCTIONS,
    "numba_ffi_test.py::TestNumbaKernelErrors::test_non_numba_function_raises": _PLAIN_FUNCTIONS,
    "numba_cuda_ffi_test.py::TestNestedVmapRejection::": (
        "numba_cuda_kernel computes nested jax.vmap (each level runs the unbatched kernel per "
        "element; 0.2.1 refused more than one level): docs/compatibility.md, 'Deliberate differences'"
    ),
}


# ------------------------------------------------------------------------- rewriting


def _rewrite_import(node: ast.Import | ast.ImportFrom) -> list[str] | None:
    """The statements that replace one import, or None to keep it as written."""
    if isinstance(node, ast.Import):
        out = []
        changed = False
        for alias in node.names:
            top = alias.name.split(".")[0]
            if top != "brainevent" or alias.name in PUBLIC_MODULES:
                out.append(f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else ""))
                continue
            changed = True
            bound = alias.asname or top
            out.append(f"{bound} = _compat_support.not_applicable({alias.name!r})")
        return ["import _compat_support", *out] if changed else None
    module = node.module or ""
    if node.level or module.split(".")[0] != "brainevent" or module in PUBLIC_MODULES:
        return None
    if module == "brainevent._test_util":
        names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in node.names)
        return [f"from _compat_support import {names}"]
    out = ["import _compat_support"]
    for alias in node.names:
        bound = alias.asname or alias.name
        if alias.name in PUBLIC:
            out.append(f"{bound} = _compat_support.public({alias.name!r})")
        else:
            out.append(f"{bound} = _compat_support.not_applicable({f'{module}.{alias.name}'!r})")
    return out


def rewrite_imports(text: str) -> str:
    """``text`` with every import of 0.2.1's private modules pointed at this package.

    Public names come from ``brainevent`` (as 0.2.1 exports them); private helpers become
    placeholders; imports of ``brainevent`` and ``brainevent.config`` stay as written.
    """
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    edits = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            new = _rewrite_import(node)
            if new is not None:
                edits.append((node, new))
    # Apply from the bottom up so earlier positions stay valid.
    for node, new in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        head = lines[first][: node.col_offset]
        tail = lines[last][node.end_col_offset :]
        indent = " " * node.col_offset if head.strip() == "" else ""
        body = ("\n" + indent).join(new) if indent or head.strip() == "" else "; ".join(new)
        lines[first : last + 1] = [head + body + tail]
    return "".join(lines)


# ------------------------------------------------------------------------- the run folder

_CONFTEST = '''"""Generated by tests/compat/run021.py.

Skips the tests listed as not applicable and marks the deliberate differences as expected failures.
"""
import os
import tempfile

import pytest

from _compat_table import APPLICABLE, DELIBERATE, NOT_APPLICABLE

os.environ.setdefault("BRAINEVENT_CACHE_DIR", tempfile.mkdtemp(prefix="brainevent-compat-cache-"))


def _find(nodeid, table):
    for prefix, reason in table.items():
        if nodeid == prefix or nodeid.startswith(prefix):
            return reason
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        reason = _find(item.nodeid, NOT_APPLICABLE)
        if reason is not None and not any(item.nodeid.startswith(p) for p in APPLICABLE):
            item.add_marker(pytest.mark.skip(reason="not applicable: tests " + reason))
            continue
        reason = _find(item.nodeid, DELIBERATE)
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason="deliberate difference: " + reason, strict=True))
'''


def download_wheel(dest: Path) -> Path:
    """``pip download`` the 0.2.1 wheel into ``dest``; its path."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            f"brainevent=={VERSION}",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
            str(dest),
            "-q",
        ],
        check=True,
    )
    wheels = sorted(dest.glob(f"brainevent-{VERSION}-*.whl"))
    if not wheels:
        raise SystemExit(f"pip download left no brainevent-{VERSION} wheel in {dest}")
    return wheels[0]


def prepare(wheel: Path, folder: Path) -> list[Path]:
    """Extract, rewrite and equip the test files in ``folder``; the test files written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    with zipfile.ZipFile(wheel) as archive:
        for suite in SUITES:
            text = archive.read(f"brainevent/_op/{suite}").decode("utf-8")
            target = folder / suite
            target.write_text(rewrite_imports(text))
            written.append(target)
    shutil.copyfile(HERE / "support.py", folder / "_compat_support.py")
    (folder / "_compat_table.py").write_text(
        f"NOT_APPLICABLE = {NOT_APPLICABLE!r}\nAPPLICABLE = {APPLICABLE!r}\nDELIBERATE = {DELIBERATE!r}\n"
    )
    (folder / "conftest.py").write_text(_CONFTEST)
    # Its own rootdir: the project's pytest settings (strict markers, testpaths) stay out.
    (folder / "pytest.ini").write_text(
        "[pytest]\naddopts = -ra -p no:cacheprovider --continue-on-collection-errors\n"
    )
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--gpu", action="store_true", help="run on the GPU (the GPU tests must not skip)")
    parser.add_argument("--wheel", type=Path, help="a brainevent 0.2.1 wheel (default: pip download it)")
    parser.add_argument("--workdir", type=Path, help="where to put the rewritten tests (default: a temp dir)")
    parser.add_argument(
        "--record", action="store_true", help="write the counts to docs/compatibility-results/ and the table"
    )
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest (after --)")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="brainevent-compat-"))
    wheel = args.wheel or download_wheel(workdir / "wheel")
    folder = workdir / "tests"
    prepare(wheel, folder)
    env = dict(os.environ)
    # The tests run from their own folder: a relative PYTHONPATH entry (``src``) must not change meaning.
    if env.get("PYTHONPATH"):
        entries = env["PYTHONPATH"].split(os.pathsep)
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in entries if p)
    if args.gpu:
        env.pop("JAX_PLATFORMS", None)
        code = "from _compat_support import _has_gpu; raise SystemExit(0 if _has_gpu() else 1)"
        if subprocess.run([sys.executable, "-c", code], cwd=folder, env=env).returncode != 0:
            raise SystemExit("--gpu: no GPU found through the CUDA driver and JAX")
    else:
        env["JAX_PLATFORMS"] = "cpu"
    print(f"0.2.1 tests rewritten into {folder}", flush=True)
    junit = workdir / "results.xml"
    pytest_args = [*(args.pytest_args or ["-q"]), *([f"--junitxml={junit}"] if args.record else [])]
    code = subprocess.run([sys.executable, "-m", "pytest", *pytest_args], cwd=folder, env=env).returncode
    if args.record:
        from compat_results import record

        print(f"recorded {record(junit, gpu=args.gpu)}")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
