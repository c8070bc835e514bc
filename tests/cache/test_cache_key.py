"""The cache key is complete, checked by behaviour alone.

For every input docs/caching.md says is keyed, changing that input alone makes the next
load build (``built_now``) a library with different bytes; for every input it says is not
keyed, the next load is a hit on the same library. Builds are byte-reproducible
(test_reproducible_build.py), so different bytes mean the input reached the compiled code,
and a stale hit would hand back the old bytes. Nothing here reads the key or the manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent

SRC_DIR = Path(__file__).resolve().parents[2] / "src"

# VAL comes from extra_cflags, HEADER_VAL and DEEP_VAL from a project header and the header
# it includes, COMPILER_V2 from the compiler; g is exported only when `functions` allows it.
SOURCE = r"""
#include "brainevent/common.h"
#include "val.h"

// @BE f arg ret
void f(const BE::Tensor x, BE::Tensor out) {
#ifdef COMPILER_V2
    const float compiler = 1000.0f;
#else
    const float compiler = 0.0f;
#endif
    BE_CHECK(x.numel() > 0) << "empty input";
    for (int64_t i = 0; i < x.numel(); ++i)
        out.data_ptr<float>()[i] = x.data_ptr<float>()[i] * VAL + HEADER_VAL + DEEP_VAL + compiler;
}

// @BE g arg ret
void g(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i];
}
"""
VAL_H = '#pragma once\n#include "deep.h"\n#define HEADER_VAL 10.0f\n'
DEEP_H = "#pragma once\n#define DEEP_VAL 100.0f\n"


@dataclass(frozen=True)
class Loaded:
    built_now: bool
    path: Path
    sha256: str

    @classmethod
    def of(cls, mod: brainevent.CompiledModule) -> Loaded:
        return cls(mod.built_now, mod.path, hashlib.sha256(mod.path.read_bytes()).hexdigest())


def _write_headers(directory: Path, val_h: str = VAL_H, deep_h: str = DEEP_H) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "val.h").write_text(val_h)
    (directory / "deep.h").write_text(deep_h)
    return directory


class Workspace:
    """An include directory and the base load every case changes one input of.

    All workspaces share one cache root (a module of one name shares its object files, so
    the cases rebuild only what their change touches); each has its own include directory,
    so the base loads of two workspaces differ in `extra_include_paths`.
    """

    def __init__(self, root: Path, cache: Path) -> None:
        self.root = root
        self.cache = cache
        self.include = _write_headers(root / "include")
        self.name = "keyprop"

    def options(self, **changes: Any) -> dict[str, Any]:
        options: dict[str, Any] = {
            "name": self.name,
            "cpp_sources": SOURCE,
            "functions": None,
            "extra_cflags": ["-DVAL=1"],
            "extra_ldflags": [],
            "extra_include_paths": [str(self.include)],
            "optimization_level": 3,
            "use_fast_math": False,
            "build_directory": str(self.cache),
            "auto_register": False,
        }
        options.update(changes)
        return options

    def load(self, **changes: Any) -> Loaded:
        return Loaded.of(brainevent.load_cpp_inline(**self.options(**changes)))


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("keyprop-cache")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Workspace:
    return Workspace(tmp_path_factory.mktemp("keyprop"), cache)


@pytest.fixture
def own_workspace(tmp_path: Path, cache: Path) -> Workspace:
    """For cases that edit files in place: the shared workspace's base stays as it is."""
    return Workspace(tmp_path, cache)


@pytest.fixture(scope="module")
def base(workspace: Workspace) -> Loaded:
    first = workspace.load()
    assert first.built_now
    return first


def _fresh_dir(workspace: Workspace, label: str) -> Path:
    path = workspace.root / label
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir()
    return path


# --------------------------------------------------------------- keyed: a change rebuilds

# Each case changes one keyed input through the loader's arguments; `make` gets the
# workspace and returns the changed arguments.
KEYED_ARGUMENTS: dict[str, Callable[[Workspace], dict[str, Any]]] = {
    "source text": lambda ws: {"cpp_sources": SOURCE.replace("* VAL", "* VAL * 2.0f")},
    "module name": lambda ws: {"name": "keyprop_renamed"},
    "functions (specs)": lambda ws: {"functions": ["f"]},  # g no longer exported
    "optimization_level": lambda ws: {"optimization_level": 1},
    "use_fast_math": lambda ws: {"use_fast_math": True},
    "extra_cflags": lambda ws: {"extra_cflags": ["-DVAL=2"]},
    "extra_ldflags": lambda ws: {"extra_ldflags": ["-Wl,-z,now"]},
    # A directory searched first, whose val.h says something else.
    "extra_include_paths": lambda ws: {
        "extra_include_paths": [
            str(_write_headers(_fresh_dir(ws, "include_first"), VAL_H.replace("10.0f", "30.0f"))),
            str(ws.include),
        ]
    },
}


@pytest.mark.parametrize("label", list(KEYED_ARGUMENTS))
def test_changing_a_keyed_argument_alone_rebuilds(workspace: Workspace, base: Loaded, label: str) -> None:
    changed = workspace.load(**KEYED_ARGUMENTS[label](workspace))
    assert changed.built_now, f"changing {label} alone was a cache hit"
    assert changed.sha256 != base.sha256, f"changing {label} alone gave the same library"


def test_changing_the_host_compiler_command_rebuilds(
    workspace: Workspace, base: Loaded, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Flags given with the compiler (CXX="g++ -DCOMPILER_V2") are part of its command.
    gxx = shutil.which("g++")
    assert gxx is not None
    monkeypatch.setenv("BRAINEVENT_CXX", f"{gxx} -DCOMPILER_V2")
    changed = workspace.load()
    assert changed.built_now and changed.sha256 != base.sha256


def test_replacing_the_compiler_at_the_same_path_rebuilds(
    own_workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An upgraded compiler at the same path: same command, new identity, other code.
    gxx = shutil.which("g++")
    compiler = own_workspace.root / "bin" / "c++"
    compiler.parent.mkdir()
    compiler.write_text(f'#!/bin/sh\nexec {gxx} "$@"\n')
    compiler.chmod(0o755)
    monkeypatch.setenv("BRAINEVENT_CXX", str(compiler))
    ws = own_workspace
    before = ws.load()
    assert before.built_now and not ws.load().built_now
    compiler.write_text(f'#!/bin/sh\nexec {gxx} -DCOMPILER_V2 "$@"\n')
    after = ws.load()
    assert after.built_now and after.sha256 != before.sha256


def test_changing_an_included_header_alone_rebuilds(own_workspace: Workspace) -> None:
    ws = own_workspace
    before = ws.load()
    assert before.built_now and not ws.load().built_now
    seen = {before.sha256}
    for header in ("deep.h", "val.h"):  # included through val.h, then directly
        path = ws.include / header
        path.write_text(path.read_text().replace("0.0f", "5.0f"))
        after = ws.load()
        assert after.built_now, f"a changed {header} was a cache hit"
        assert after.sha256 not in seen, f"a changed {header} gave the same library"
        seen.add(after.sha256)


FILE_SOURCE = SOURCE.replace('#include "val.h"', '#include "local.h"').replace("HEADER_VAL", "LOCAL_VAL")


def test_file_sources_key_their_path_text_and_neighbouring_header(tmp_path: Path, cache: Path) -> None:
    def load(path: Path) -> Loaded:
        return Loaded.of(
            brainevent.load_cpp_file(
                path,
                name="keyprop_file",
                extra_cflags=["-DVAL=1", "-DDEEP_VAL=0.0f"],
                build_directory=str(cache),
                auto_register=False,
            )
        )

    first = tmp_path / "a" / "kernels.cpp"
    first.parent.mkdir()
    first.write_text(FILE_SOURCE)
    (first.parent / "local.h").write_text("#define LOCAL_VAL 1.0f\n")
    base = load(first)
    assert base.built_now and not load(first).built_now
    # The same text and header in another directory: the path is keyed (and __FILE__ differs).
    moved = tmp_path / "b" / "kernels.cpp"
    shutil.copytree(first.parent, moved.parent)
    elsewhere = load(moved)
    assert elsewhere.built_now and elsewhere.sha256 != base.sha256
    # The header next to the file (found through the quoted include).
    (first.parent / "local.h").write_text("#define LOCAL_VAL 2.0f\n")
    header_changed = load(first)
    assert header_changed.built_now and header_changed.sha256 != base.sha256
    # The file's text.
    first.write_text(FILE_SOURCE.replace("* VAL", "* VAL * 2.0f"))
    text_changed = load(first)
    assert text_changed.built_now and text_changed.sha256 not in (base.sha256, header_changed.sha256)


def test_changing_extra_cflags_alone_changes_the_result(tmp_path: Path) -> None:
    """A user who edits a -D flag gets the new value, not the library built with the old one."""
    source = r"""
#include "brainevent/common.h"
// @BE fill ret
void fill(BE::Tensor out) {
    for (int64_t i = 0; i < out.numel(); ++i) out.data_ptr<float>()[i] = VAL;
}
"""
    out = jax.ShapeDtypeStruct((3,), jnp.float32)
    for value, builds in ((1, True), (2, True), (1, False)):  # back to -DVAL=1: its entry is kept
        mod = brainevent.load_cpp_inline(
            name="keyprop_cflags",
            cpp_sources=source,
            extra_cflags=[f"-DVAL={value}"],
            build_directory=str(tmp_path),
        )
        assert mod.built_now == builds, value
        np.testing.assert_array_equal(np.asarray(mod.fill(outs=out)), np.full(3, float(value)))


# ------------------------------------- keyed inputs that come with the installation

# A load in a fresh interpreter: brainevent from the first PYTHONPATH entry, optionally with
# JAX's XLA headers taken from another directory, as another jaxlib release would have them.
FRESH_LOAD = r"""
import json, sys
args = json.loads(sys.argv[1])
if args["xla_root"]:
    import jaxlib
    jaxlib.__spec__.submodule_search_locations.insert(0, args["xla_root"])
import brainevent
mod = brainevent.load_cpp_inline(**args["options"])
print(json.dumps({"built_now": mod.built_now, "path": str(mod.path), "package": brainevent.__file__}))
"""


def _fresh_load(
    workspace: Workspace, package_parent: Path, xla_root: Path | None = None
) -> tuple[Loaded, bytes]:
    env = dict(os.environ, PYTHONPATH=str(package_parent))
    args = {"options": workspace.options(), "xla_root": str(xla_root) if xla_root else None}
    done = subprocess.run(
        [sys.executable, "-c", FRESH_LOAD, json.dumps(args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(result["package"]).is_relative_to(package_parent), result["package"]
    library = Path(result["path"]).read_bytes()
    return Loaded(result["built_now"], Path(result["path"]), hashlib.sha256(library).hexdigest()), library


def _marker(text: str) -> str:
    """C/C++ that puts `text` into any library compiled with it."""
    return f'\nstatic __attribute__((used)) const char be_key_test_marker[] = "{text}";\n'


def test_fresh_process_with_the_same_inputs_is_a_hit(workspace: Workspace, base: Loaded) -> None:
    # The control for the cases below: a fresh interpreter computes the same key as this one.
    again, _ = _fresh_load(workspace, Path(brainevent.__file__).resolve().parents[1])
    assert not again.built_now and again.sha256 == base.sha256


def _package_copy(tmp_path: Path, workspace: Workspace) -> Path:
    """A copy of the installed package, and the proof that loads through it are stable."""
    package = tmp_path / "site" / "brainevent"
    source = Path(brainevent.__file__).resolve().parent
    shutil.copytree(source, package, ignore=shutil.ignore_patterns("__pycache__"))
    first, _ = _fresh_load(workspace, package.parent)  # a hit or not: the package moved
    stable, _ = _fresh_load(workspace, package.parent)
    assert not stable.built_now and stable.sha256 == first.sha256
    return package


def _set_version(package: Path, tag: str) -> None:
    version = package / "_version.py"
    text = version.read_text()
    old = text.split('__version__ = "', 1)[1].split('"', 1)[0]
    version.write_text(text.replace(f'__version__ = "{old}"', f'__version__ = "99.0.0+{tag}"'))


def test_package_version_is_keyed(tmp_path: Path, workspace: Workspace) -> None:
    package = _package_copy(tmp_path, workspace)
    _set_version(package, "next")  # a new release, nothing else changed
    new_version, _ = _fresh_load(workspace, package.parent)
    assert new_version.built_now, "a new package version was a cache hit"


def test_package_upgrade_with_changed_headers_compiles_against_them(
    tmp_path: Path, workspace: Workspace
) -> None:
    package = _package_copy(tmp_path, workspace)
    _set_version(package, "first")
    built, _ = _fresh_load(workspace, package.parent)  # a build through this installation
    assert built.built_now
    # An upgrade in place: brainevent's own headers changed (common.h is what SOURCE includes).
    _set_version(package, "second")
    common = package / "include" / "brainevent" / "common.h"
    common.write_text(common.read_text() + _marker("package headers changed"))
    upgraded, library = _fresh_load(workspace, package.parent)
    assert upgraded.built_now, "changed brainevent headers were a cache hit"
    assert b"package headers changed" in library, "the kernel was not compiled against the new headers"


def test_xla_c_abi_header_is_keyed(tmp_path: Path, workspace: Workspace) -> None:
    import jaxlib

    (location,) = (p for p in jaxlib.__spec__.submodule_search_locations if (Path(p) / "include").is_dir())
    api = Path(location) / "include" / "xla" / "ffi" / "api"
    other_api = tmp_path / "jaxlib" / "include" / "xla" / "ffi" / "api"
    shutil.copytree(api, other_api)
    here = Path(brainevent.__file__).resolve().parents[1]
    first, _ = _fresh_load(workspace, here, tmp_path / "jaxlib")
    stable, _ = _fresh_load(workspace, here, tmp_path / "jaxlib")
    assert not stable.built_now and stable.sha256 == first.sha256
    c_api = other_api / "c_api.h"
    c_api.write_text(c_api.read_text() + _marker("xla abi changed"))
    changed, library = _fresh_load(workspace, here, tmp_path / "jaxlib")
    assert changed.built_now, "a changed XLA C ABI header was a cache hit"
    assert b"xla abi changed" in library


# ------------------------------------------------------------ not keyed: a change is a hit

NOT_KEYED: dict[str, dict[str, Any]] = {
    "target_prefix": {"target_prefix": "keyprop_elsewhere"},
    "verbose": {"verbose": True},
    "auto_register": {"auto_register": True},
}


@pytest.mark.parametrize("label", list(NOT_KEYED))
def test_changing_an_input_outside_the_key_is_a_hit(workspace: Workspace, base: Loaded, label: str) -> None:
    workspace.load()  # whatever earlier cases did, the base entry is in place
    again = workspace.load(**NOT_KEYED[label])
    assert not again.built_now, f"changing {label} rebuilt the module"
    assert again.sha256 == base.sha256


# ------------------------------------------------------------------------ CUDA (nvcc, no GPU)

CUDA_SOURCE = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"
__global__ void fill_kernel(float* out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = VAL;
}
// @BE fill ret stream
void fill(BE::Tensor out, int64_t stream) {
    const int64_t n = out.numel();
    fill_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(out.data_ptr<float>(), n);
}
"""


def _cuda_load(cache: Path, **changes: Any) -> Loaded:
    options: dict[str, Any] = {
        "name": "keyprop_cuda",
        "cuda_sources": CUDA_SOURCE,
        "extra_cuda_cflags": ["-DVAL=1"],
        "compute_capability": "sm_75",
        "build_directory": str(cache),
        "auto_register": False,
    }
    options.update(changes)
    return Loaded.of(brainevent.load_cuda_inline(**options))


@pytest.fixture(scope="module")
def cuda_base(cache: Path) -> Loaded:
    first = _cuda_load(cache)
    assert first.built_now
    return first


@pytest.mark.nvcc
@pytest.mark.parametrize(
    ("label", "change"),
    [("archs", {"compute_capability": "sm_80"}), ("extra_cuda_cflags", {"extra_cuda_cflags": ["-DVAL=2"]})],
    ids=["archs", "extra_cuda_cflags"],
)
def test_changing_a_keyed_cuda_argument_alone_rebuilds(
    cache: Path, cuda_base: Loaded, label: str, change: dict[str, Any]
) -> None:
    changed = _cuda_load(cache, **change)
    assert changed.built_now, f"changing {label} alone was a cache hit"
    assert changed.sha256 != cuda_base.sha256


@pytest.mark.nvcc
@pytest.mark.parametrize(
    "change",
    [{"allow_cuda_graph": False}, {"ninja_workers": 1}, {"target_prefix": "keyprop_cuda_elsewhere"}],
    ids=["allow_cuda_graph", "ninja_workers", "target_prefix"],
)
def test_changing_a_cuda_input_outside_the_key_is_a_hit(
    cache: Path, cuda_base: Loaded, change: dict[str, Any]
) -> None:
    again = _cuda_load(cache, **change)
    assert not again.built_now and again.sha256 == cuda_base.sha256
