"""The public facade (``brainevent/__init__.py``) and the typed fields of the error classes.

The facade imports its heavy names on first use; type checkers read them from an
``if TYPE_CHECKING:`` block. These tests keep that block and the lazy table in step,
and check that ``import brainevent`` alone stays light.
"""

from __future__ import annotations

import ast
import inspect
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import brainevent
from brainevent import errors

INIT = Path(brainevent.__file__)


def _type_checking_imports() -> dict[str, str]:
    """public name -> module, read from the ``if TYPE_CHECKING:`` block."""
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    blocks = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
    ]
    assert len(blocks) == 1, "expected one `if TYPE_CHECKING:` block in brainevent/__init__.py"
    found: dict[str, str] = {}
    for stmt in blocks[0].body:
        assert isinstance(stmt, ast.ImportFrom) and stmt.level == 1, ast.unparse(stmt)
        for alias in stmt.names:
            # `import x as x` is how a stub marks a re-export; anything else hides the name.
            assert alias.asname == alias.name, ast.unparse(stmt)
            found[alias.name] = str(stmt.module)
    return found


def test_type_checking_block_and_lazy_table_list_the_same_names() -> None:
    assert _type_checking_imports() == brainevent._EXPORTS


def test_every_public_name_resolves() -> None:
    assert len(set(brainevent.__all__)) == len(brainevent.__all__)
    for name in brainevent.__all__:
        assert getattr(brainevent, name) is not None, name
    for name, module in brainevent._EXPORTS.items():
        assert getattr(brainevent, name) is getattr(sys.modules[f"brainevent.{module}"], name)
    assert set(errors.__all__) <= set(brainevent.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'load_cpp_inlin'"):
        brainevent.load_cpp_inlin  # type: ignore[attr-defined]  # noqa: B018


def test_dir_lists_the_lazy_names_before_their_first_use() -> None:
    """Tab completion (dir()) sees every lazily exported name, and asking imports nothing."""
    lazy = sorted(
        {f"brainevent.{module}" for module in brainevent._EXPORTS.values()} - {"brainevent.cuda_graphs"}
    )
    code = (
        "import sys, brainevent\n"
        "names = dir(brainevent)\n"
        "print(sorted(set(brainevent._EXPORTS) - set(names)), sorted(set(brainevent.__all__) - set(names)))\n"
        f"print(sorted(m for m in {lazy!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[:2] == ["[] []", "[]"], done.stdout + done.stderr
    assert {"cuda_kernel", "XLACustomKernel", "load_cpp_dir", "__version__"} <= set(dir(brainevent))


def test_import_brainevent_loads_no_lazy_module() -> None:
    # cuda_graphs is imported on purpose: it must edit XLA_FLAGS before JAX starts (it imports
    # nothing heavy); every other module behind a lazy name waits for first use.
    eager = {"brainevent.cuda_graphs"}
    lazy = sorted({f"brainevent.{module}" for module in brainevent._EXPORTS.values()} - eager)
    code = (
        "import sys, brainevent\n"
        f"print(sorted(m for m in {lazy!r} if m in sys.modules))\n"
        "print('jax' in sys.modules, 'numpy' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[:2] == ["[]", "False False"], done.stdout + done.stderr


def _error_classes() -> list[type[errors.BrainEventError]]:
    from brainevent.config import ConfigError

    found = [getattr(errors, name) for name in errors.__all__]
    return [cls for cls in found if issubclass(cls, errors.BrainEventError)] + [ConfigError]


def _fields(cls: type) -> dict[str, str]:
    """field name -> its annotation (as written), over the class and its bases."""
    found: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        for name, hint in vars(klass).get("__annotations__", {}).items():
            if name != "message" and not str(hint).startswith("ClassVar"):
                found[name] = str(hint)
    return found


# bases that are only caught, never raised with data
_NO_FIELDS = {
    errors.BrainEventError,
    errors.KernelError,
    errors.KernelToolchainError,
    errors.KernelCompilationError,
    errors.KernelLoadError,
    errors.KernelRegistrationError,
    errors.KernelNotAvailableError,
    errors.KernelExecutionError,
    errors.CUDANotInstalledError,
}


@pytest.mark.parametrize("cls", _error_classes(), ids=lambda c: c.__name__)
def test_error_fields_are_typed_and_survive_pickling(cls: type[errors.BrainEventError]) -> None:
    fields = _fields(cls)
    err = cls("the message")
    assert str(err) == "the message" and err.data == {}
    for name in fields:  # a field not given reads as its default rather than failing
        assert getattr(err, name) == inspect.getattr_static(cls, name)
    assert fields or cls in _NO_FIELDS, f"{cls.__name__} declares no fields"
    given = {name: f"value of {name}" for name in fields}
    err = cls("the message", **given)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls and str(back) == "the message" and back.data == given
    for name, value in given.items():
        assert getattr(back, name) == value


def test_the_fields_a_class_declares() -> None:
    assert {"command", "log", "log_path", "timed_out", "timeout_s", "first_error", "module"} <= set(
        _fields(errors.CompileError)
    )
    assert {"path", "lock_path", "holder", "module", "disk_full"} == set(_fields(errors.CacheError))
    assert {"candidates", "found_via", "path", "compiler"} <= set(_fields(errors.NvccNotFoundError))
    assert {"tried", "kernel", "platform", "backend"} <= set(_fields(errors.KernelFallbackExhaustedError))
    # a subclass of both sides of a multiple inheritance has the fields of both
    both = set(_fields(errors.HostCompilerIncompatibleError))
    assert {"kind", "version", "max_supported", "nvcc_version", "log_path"} <= both


def test_compile_error_keeps_0_2_1_attributes() -> None:
    err = errors.CompilationError("failed", log="x.cc:1: error: nope")
    assert err.compiler_output == "x.cc:1: error: nope" and err.command == "" and err.stage == "compile"


def test_compile_error_reads_its_log_file(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    log.write_text("x.cc:2: error: from the file\n", encoding="utf-8")
    err = pickle.loads(pickle.dumps(errors.CompileError("failed", log_path=str(log))))
    assert err.compiler_output == "x.cc:2: error: from the file\n"
    assert errors.CompileError("failed", log_path=str(tmp_path / "gone.log")).compiler_output == ""


def test_extra_keyword_data_is_kept() -> None:
    # 0.2.1-era code passes data the class does not declare; it stays an attribute and in .data
    err = errors.KernelError("message", anything=3)
    assert err.anything == 3 and err.data == {"anything": 3}  # type: ignore[attr-defined]
    assert pickle.loads(pickle.dumps(err)).data == {"anything": 3}
