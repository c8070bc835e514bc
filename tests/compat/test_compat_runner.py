"""tests/compat/run021.py: the import rewriting, the tables, and a run on a stand-in wheel.

The real 0.2.1 wheel is used by ``nox -s compat`` only; here a small wheel of our own with
the same file names stands in for it, so nothing is downloaded.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _load_runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("run021", ROOT / "tests" / "compat" / "run021.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


run021 = _load_runner()

SOURCE = textwrap.dedent(
    '''\
    """A test file in 0.2.1's style."""
    import os

    import brainevent
    import brainevent as jkb
    from brainevent._error import KernelError, KernelLoadError
    from brainevent._op import kernix_runtime as kr
    from brainevent._op.numba_ffi import (
        _ensure_sequence,
        numba_kernel,
    )
    from brainevent._test_util import requires_gpu
    from brainevent.config import set_backend

    X = 1  # code is kept as written


    def test_inner():
        from brainevent._error import KernelRegistrationError
        import brainevent._op.numba_cuda_ffi as ffi
        if X:
            from brainevent import numba_cuda_kernel
        return KernelRegistrationError, ffi
    '''
)


def test_rewrite_points_private_imports_at_public_names_and_keeps_the_rest() -> None:
    out = run021.rewrite_imports(SOURCE)
    ast.parse(out)  # still valid Python
    lines = out.splitlines()
    assert "import brainevent" in lines and "import brainevent as jkb" in lines
    assert "from brainevent.config import set_backend" in lines
    assert "KernelError = _compat_support.public('KernelError')" in lines
    assert "KernelLoadError = _compat_support.public('KernelLoadError')" in lines
    assert "kr = _compat_support.not_applicable('brainevent._op.kernix_runtime')" in lines
    assert "numba_kernel = _compat_support.public('numba_kernel')" in lines
    assert (
        "_ensure_sequence = _compat_support.not_applicable('brainevent._op.numba_ffi._ensure_sequence')"
        in lines
    )
    assert "from _compat_support import requires_gpu" in lines
    # Nested imports keep their indentation; public imports inside functions stay.
    assert "    KernelRegistrationError = _compat_support.public('KernelRegistrationError')" in lines
    assert "    ffi = _compat_support.not_applicable('brainevent._op.numba_cuda_ffi')" in lines
    assert "        from brainevent import numba_cuda_kernel" in lines
    # Everything that is not an import is untouched.
    assert '"""A test file in 0.2.1\'s style."""' in lines and "X = 1  # code is kept as written" in lines
    assert "    return KernelRegistrationError, ffi" in lines
    assert "_op" not in "".join(line for line in lines if line.startswith(("from", "import")))


def test_tables_name_only_known_files_and_do_not_overlap() -> None:
    for table in (run021.NOT_APPLICABLE, run021.DELIBERATE):
        for prefix, reason in table.items():
            assert prefix.split("::")[0] in run021.SUITES, prefix
            assert reason.strip() and not reason.endswith(".")
    for name in run021.APPLICABLE:
        assert any(name.startswith(p) for p in run021.NOT_APPLICABLE), name
    for prefix in run021.DELIBERATE:
        assert not any(prefix.startswith(n) or n.startswith(prefix) for n in run021.NOT_APPLICABLE), prefix
        assert "docs/compatibility.md" in run021.DELIBERATE[prefix]


STAND_IN = {
    "kernix_cache_test.py": "def test_private_cache():\n    raise AssertionError('must be skipped')\n",
    "numba_ffi_test.py": textwrap.dedent(
        """\
        import jax
        import jax.numpy as jnp
        import pytest
        from brainevent._error import KernelError
        from brainevent._op.numba_ffi import numba_kernel, _ensure_sequence


        class TestNumbaKernelErrors:
            def test_lambda_raises(self):
                with pytest.raises(TypeError):
                    numba_kernel(lambda x, out: None, outs=jax.ShapeDtypeStruct((1,), jnp.float32))


        def test_public_names_resolve():
            import brainevent
            assert KernelError is brainevent.KernelError
            assert numba_kernel is brainevent.numba_kernel
        """
    ),
    "util_test.py": textwrap.dedent(
        """\
        from brainevent._op.util import HIPBackend


        def test_missing_public_name_fails_when_used():
            HIPBackend()
        """
    ),
}


def _stand_in_wheel(path: Path) -> Path:
    wheel = path / "brainevent-0.2.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for suite in run021.SUITES:
            archive.writestr(
                f"brainevent/_op/{suite}", STAND_IN.get(suite, "def test_nothing():\n    pass\n")
            )
    return wheel


def test_a_run_skips_marks_and_runs(tmp_path: Path) -> None:
    wheel = _stand_in_wheel(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), JAX_PLATFORMS="cpu")
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tests" / "compat" / "run021.py"),
            "--wheel",
            str(wheel),
            "--workdir",
            str(tmp_path / "work"),
            "--",
            "-q",
            "-rsxf",
            "-p",
            "no:randomly",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    out = done.stdout + done.stderr
    assert "not applicable: tests 0.2.1's private CompilationCache class" in out
    assert "XFAIL numba_ffi_test.py::TestNumbaKernelErrors::test_lambda_raises" in out
    assert "deliberate difference: numba_kernel compiles a plain Python function" in out
    assert "FAILED util_test.py::test_missing_public_name_fails_when_used" in out
    assert "brainevent.HIPBackend: 0.2.1 exports this name; this project does not" in out
    assert "1 failed" in out and "passed" in out and done.returncode == 1
    assert not list((tmp_path / "work" / "tests").glob("*.whl"))
    text = (tmp_path / "work" / "tests" / "numba_ffi_test.py").read_text()
    assert "brainevent._op" not in text.replace("'brainevent._op.numba_ffi._ensure_sequence'", "")


def test_the_runner_documents_itself() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "compat" / "run021.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "--gpu" in done.stdout and "pip download" in done.stdout
