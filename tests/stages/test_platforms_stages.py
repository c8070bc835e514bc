"""The load pipeline's seams: platforms looked up by name, options checked once, build()
apart from load(), and shared stages that never name a platform or a compiler."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest

import brainevent
from brainevent import platform_table as devices
from brainevent import platforms
from brainevent.errors import RegistrationError, SpecError
from brainevent.load_options import CPU, CUDA, OPTIONS, LoadOptions, keywords_of
from brainevent.loaders import load_cpp_file, load_cpp_inline, load_cuda_file, load_cuda_inline
from brainevent.runtime.registry import registered_targets
from brainevent.stages.load import build, load
from brainevent.stages.request import inline_unit, make_request

PACKAGE = Path(brainevent.__file__).parent

ADD = r"""
#include "brainevent/common.h"
// @BE add arg arg ret
void add(const BE::Tensor a, const BE::Tensor b, BE::Tensor out) {
    for (int64_t i = 0; i < a.numel(); ++i)
        out.data_ptr<float>()[i] = a.data_ptr<float>()[i] + b.data_ptr<float>()[i];
}
"""


def _keyword_defaults(function: object) -> dict[str, object]:
    parameters = inspect.signature(function).parameters.values()  # type: ignore[arg-type]
    return {p.name: p.default for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}


@pytest.mark.parametrize(
    ("loader", "accepted"), [(load_cpp_inline, keywords_of(CPU)), (load_cuda_inline, keywords_of(CUDA))]
)
def test_the_inline_loaders_signatures_are_the_option_tables(
    loader: object, accepted: tuple[str, ...]
) -> None:
    # The file and directory loaders take their options through **kwargs, checked against
    # the table: the inline loader's keyword-only parameters must be the table's, defaults too.
    defaults = _keyword_defaults(loader)
    assert sorted(defaults) == sorted(set(accepted) - {"name"})
    table = {o.name: o.default for o in OPTIONS}
    assert defaults == {keyword: table[keyword] for keyword in defaults}


def test_load_options_fields_and_annotations_are_the_tables() -> None:
    fields = tuple(dict.fromkeys(o.field for o in OPTIONS))
    assert LoadOptions._fields == fields
    assert tuple(LoadOptions.__annotations__) == fields


@pytest.mark.parametrize("loader", [load_cpp_file, load_cuda_file])
def test_an_unknown_keyword_of_a_file_loader_is_a_type_error(loader: object, tmp_path: Path) -> None:
    source = tmp_path / "k.cu"
    source.write_text(ADD)
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['extra_cxx_flags'\]; accepted"):
        loader(source, extra_cxx_flags=["-O1"])  # type: ignore[operator]


def test_options_are_checked_when_the_request_is_made() -> None:
    unit = inline_unit("m", ADD, "cpp_sources", ".cpp")
    with pytest.raises(SpecError, match=r"optimization_level=7 is not valid: expected an int 0, 1, 2 or 3"):
        make_request("cpu", [unit], "m", None, {"optimization_level": 7})
    with pytest.raises(SpecError, match=r"extra_cflags='-O1' must be a list of strings"):
        make_request("cpu", [unit], "m", None, {"extra_cflags": "-O1"})
    request = make_request("cpu", [unit], "m", None, {"extra_cflags": ["-DX=1"]})
    assert request.options.extra_cflags == ("-DX=1",)
    assert request.platform.name == "cpu"


def test_build_makes_the_artifact_without_registering_and_load_then_registers_it() -> None:
    unit = inline_unit("stages_add", ADD, "cpp_sources", ".cpp")
    request = make_request("cpu", [unit], "stages_add", None, {})
    artifact = build(request)
    assert artifact.built_now and artifact.library.is_file()
    assert sorted(artifact.manifest.functions) == ["add"]
    assert "stages_add.add" not in registered_targets()
    again = build(request)
    assert not again.built_now and again.library == artifact.library
    module = load(request)
    assert not module.built_now and module.registered and str(module.path) == str(artifact.library)
    a = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(module.add(a, a)), 2 * a)


def test_register_ffi_target_takes_the_spellings_the_platforms_list() -> None:
    spellings = platforms.jax_spellings()
    assert spellings == {"cpu": "cpu", "host": "cpu", "cuda": "CUDA", "gpu": "CUDA"}
    module = load_cpp_inline("stages_spell", ADD, auto_register=False)
    brainevent.register_ffi_target("stages_spell.by_host", module, "add", platform="HOST")
    assert "stages_spell.by_host" in registered_targets()
    with pytest.raises(RegistrationError, match=r"platform='tpu' is not known; expected 'cpu' or 'CUDA'"):
        brainevent.register_ffi_target("stages_spell.x", module, "add", platform="tpu")
    with pytest.raises(RegistrationError, match=r"module 'stages_spell' was built for 'cpu'"):
        brainevent.register_ffi_target("stages_spell.y", module, "add", platform="gpu")


def test_every_registered_platform_names_what_the_stages_ask_of_it() -> None:
    for name in devices.BUILD_PLATFORMS:
        cls = platforms.platform_class(name)
        assert cls.name == name
        for member in ("jax_platform", "spellings", "scratch_dirs", "binding_target", "compile_steps"):
            assert hasattr(cls, member), (name, member)


def _literals(path: Path) -> list[tuple[int, str]]:
    """The string constants of a module that are not docstrings."""
    tree = ast.parse(path.read_text())
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


@pytest.mark.parametrize("stage", ["stages", "build", "cache", "runtime"])
def test_shared_stages_name_no_platform_and_no_compiler(stage: str) -> None:
    names = set()
    for name in devices.BUILD_PLATFORMS:
        cls = platforms.platform_class(name)
        names |= {cls.name, cls.jax_platform}  # ("host", a spelling, is also a lock record's key)
    found = [
        f"{path.relative_to(PACKAGE)}:{line}: {text!r}"
        for path in sorted((PACKAGE / stage).glob("*.py"))
        for line, text in _literals(path)
        if text in names or "nvcc" in text
    ]
    assert found == []


# Every platform name, spelling and source suffix the platform table holds.
_TABLE_WORDS = {
    word
    for row in devices.DEVICE_PLATFORMS
    for word in (
        row.name,
        *row.spellings,
        *row.jax_platforms,
        *row.ffi_spellings,
        row.ffi_platform,
        *row.suffixes,
    )
    if word
} | set(devices.C_SUFFIXES)
# Tables of their own, keyed by the platform table's names (checked below).
_OWN_TABLES = {"platform_table.py", "backends.py"}


def _platform_lists(path: Path) -> list[str]:
    """The tuple/list/set literals and dict keys naming two or more platforms or suffixes."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
        if not isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)) or items is None:
            continue
        words = [i.value for i in items if isinstance(i, ast.Constant) and i.value in _TABLE_WORDS]
        if len(words) >= 2:
            found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {words}")
    return found


def test_no_module_but_the_platform_table_lists_platforms() -> None:
    # One platform table (platform_table.py): every other list of platform names,
    # spellings or source suffixes reads it, so adding a platform is one row.
    found = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).as_posix() not in _OWN_TABLES
        for hit in _platform_lists(path)
    ]
    assert found == []


def test_the_platform_table_is_what_the_rest_reads() -> None:
    from brainevent import config
    from brainevent.backends import LIBRARIES
    from brainevent.vocabulary import PLATFORM_ENUM

    assert config.PLATFORM_ALIASES["cuda"] == config.PLATFORM_ALIASES["gpu"] == "gpu"
    assert tuple(devices.BUILD_PLATFORMS) == ("cpu", "cuda")  # on-disk names
    for name, row in devices.BUILD_PLATFORMS.items():
        cls = platforms.platform_class(name)
        assert (cls.name, cls.jax_platform, cls.spellings) == (name, row.ffi_platform, row.ffi_spellings)
        assert PLATFORM_ENUM[name] == row.binding_enum
        assert cls.binding_defines == row.binding_defines
    assert platforms.jax_spellings() == {"cpu": "cpu", "host": "cpu", "cuda": "CUDA", "gpu": "CUDA"}
    assert devices.UNIT_SUFFIXES[".cc"] == ".cpp" and devices.UNIT_SUFFIXES[".c"] == ".c"
    assert devices.PLATFORM_OF_SUFFIX[".cu"] == "cuda"
    for library in LIBRARIES.values():
        assert set(library.platforms) <= set(devices.BY_NAME), library
