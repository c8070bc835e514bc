"""Stale code is never served: races with the build, colliding names, damaged shared objects.

Real g++ throughout; the races are made by a compiler wrapper that changes files right
after the real compiler read them, as a user saving mid-build (or a `git checkout`) would.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent import CacheError

SRC = str(Path(__file__).resolve().parents[2] / "src")

KERNEL = """
#include "brainevent/common.h"
#include "val.h"
// @BE f arg ret
void f(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i] + VAL;
}
"""


def result(mod: brainevent.CompiledModule) -> float:
    return float(np.asarray(mod.f(jnp.zeros(1, jnp.float32)))[0])


def old_file(path: Path, text: str) -> Path:
    path.write_text(text)
    past = time.time() - 600
    os.utime(path, (past, past))
    return path


def replacing_compiler(tmp_path: Path, header: Path, text: str) -> Path:
    """g++, then (once) the header replaced by a file whose mtime is older than the build."""
    new = tmp_path / "new.h"
    wrapper = tmp_path / "replacing-g++"
    wrapper.write_text(
        "#!/bin/sh\n"
        'g++ "$@" || exit $?\n'
        f'case "$*" in *.cpp*) if [ ! -e {tmp_path}/done ]; then touch {tmp_path}/done;\n'
        f"  printf '{text}\\n' > {new}; touch -d @1000000000 {new}; mv {new} {header}; fi ;; esac\n"
    )
    wrapper.chmod(0o755)
    return wrapper


def test_header_replaced_during_the_build_by_an_older_file_is_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "k.cpp"
    source.write_text(KERNEL)
    header = old_file(tmp_path / "val.h", "#define VAL 3")
    monkeypatch.setenv("BRAINEVENT_CXX", str(replacing_compiler(tmp_path, header, "#define VAL 5")))
    first = brainevent.load_cpp_file(source, build_directory=tmp_path / "cache", target_prefix="st1")
    assert first.built_now and result(first) == 3.0  # compiled from the old text
    assert header.stat().st_mtime < time.time() - 3600  # the new text, with an old mtime
    # The same compiler (its identity is in the key); it replaces nothing any more.
    second = brainevent.load_cpp_file(source, build_directory=tmp_path / "cache", target_prefix="st1")
    assert second.built_now, "the library was built from the replaced text: it must not be served"
    assert result(second) == 5.0


def test_header_edited_during_build_into_refuses_the_bundle(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "k.cpp").write_text(KERNEL)
    header = old_file(package / "val.h", "#define VAL 3")
    env = dict(
        os.environ,
        PYTHONPATH=SRC,
        JAX_PLATFORMS="cpu",
        BRAINEVENT_CACHE_DIR=str(tmp_path / "cache"),
        BRAINEVENT_CXX=str(replacing_compiler(tmp_path, header, "#define VAL 5")),
    )
    done = subprocess.run(
        [sys.executable, "-m", "brainevent", "build", "--into", str(package), "--platform", "cpu"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "changed while the module was being built" in done.stderr
    assert not list(package.glob("_brainevent/*/manifest.json")), "no bundle may be written"


def test_non_ascii_names_that_differ_give_different_modules(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "val.h").write_text("#define VAL 3\n")
    first, second = package / "kä.cpp", package / "kö.cpp"
    first.write_text(KERNEL)
    second.write_text(KERNEL.replace("+ VAL", "+ VAL + 4"))
    a = brainevent.load_cpp_file(first, build_directory=tmp_path / "cache")
    b = brainevent.load_cpp_file(second, build_directory=tmp_path / "cache")
    assert a.name != b.name
    assert result(a) == 3.0 and result(b) == 7.0  # loading b did not re-point a's targets
    env = dict(os.environ, PYTHONPATH=SRC, JAX_PLATFORMS="cpu", BRAINEVENT_CACHE_DIR=str(tmp_path / "c2"))
    done = subprocess.run(
        [sys.executable, "-m", "brainevent", "build", "--into", str(package), "--platform", "cpu"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(list(package.glob("_brainevent/*/manifest.json"))) == 2


def test_build_into_refuses_two_files_that_share_a_module_name(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "val.h").write_text("#define VAL 3\n")
    (package / "a-b.cpp").write_text(KERNEL)
    (package / "a_b.cpp").write_text(KERNEL.replace("+ VAL", "+ VAL + 4"))
    env = dict(os.environ, PYTHONPATH=SRC, JAX_PLATFORMS="cpu", BRAINEVENT_CACHE_DIR=str(tmp_path / "c"))
    done = subprocess.run(
        [sys.executable, "-m", "brainevent", "build", "--into", str(package), "--platform", "cpu"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1
    assert "a_b.cpp: its module name is that of a-b.cpp" in done.stderr, done.stderr[-2000:]
    assert len(list(package.glob("_brainevent/*/manifest.json"))) == 1  # the first, not replaced


def test_damaged_shared_decoder_object_is_rebuilt(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (tmp_path / "val.h").write_text("#define VAL 3\n")
    (tmp_path / "one.cpp").write_text(KERNEL)
    brainevent.load_cpp_file(tmp_path / "one.cpp", build_directory=cache, auto_register=False)
    (decoder,) = (cache / "v1" / ".decoder" / "objects").glob("*.o")
    stamp = decoder.stat()
    data = bytearray(decoder.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = b"\xff" * 64  # same size, same mtime
    decoder.write_bytes(bytes(data))
    os.utime(decoder, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    (tmp_path / "two.cpp").write_text(KERNEL.replace("+ VAL", "+ VAL + 1"))
    two = brainevent.load_cpp_file(tmp_path / "two.cpp", build_directory=cache, target_prefix="st4")
    assert two.built_now and result(two) == 4.0
    assert decoder.read_bytes() != bytes(data), "the damaged object was replaced"


def test_build_into_error_is_typed(tmp_path: Path) -> None:
    from brainevent.bundle.command import write_bundle

    with pytest.raises(CacheError):
        write_bundle([], tmp_path, tmp_path)
