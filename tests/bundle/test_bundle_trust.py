"""Bundles meet the cache's trust rule: no other local user can get their code loaded.

The attacker runs as a second, unprivileged uid (``nobody``) when the suite runs as root;
elsewhere these tests skip. ``build --into`` runs under umask 000.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent import CacheError

ATTACKER = 65534
SRC = str(Path(__file__).resolve().parents[2] / "src")

if os.getuid() != 0:
    pytest.skip("acting as a second user needs root", allow_module_level=True)

KERNEL = r"""
#include "brainevent/common.h"
#include "val.h"
// @BE f arg ret
void f(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i] + VAL;
}
"""


@pytest.fixture
def base() -> Iterator[Path]:
    """A directory the second user can reach (pytest's tmp_path is private to root)."""
    where = Path(tempfile.mkdtemp(prefix="brainevent-bundle-trust-"))
    where.chmod(0o755)
    yield where
    shutil.rmtree(where, ignore_errors=True)


def make_package(where: Path, val: str) -> Path:
    kernels = where / "pkg" / "kern"
    kernels.mkdir(parents=True)
    (kernels / "k.cpp").write_text(KERNEL)
    (kernels / "val.h").write_text(f"#define VAL {val}\n")
    for p in (where / "pkg", kernels):
        p.chmod(0o755)
    return kernels


def build_into(package: Path, cache: Path) -> None:
    env = dict(os.environ, PYTHONPATH=SRC, JAX_PLATFORMS="cpu", BRAINEVENT_CACHE_DIR=str(cache))
    done = subprocess.run(
        [sys.executable, "-m", "brainevent", "build", "--into", str(package), "--platform", "cpu"],
        env=env, capture_output=True, text=True, timeout=300, umask=0,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]


def value(mod: brainevent.CompiledModule) -> float:
    return float(np.asarray(mod.f(jnp.zeros(1, jnp.float32)))[0])


def test_build_into_writes_safe_modes_whatever_the_umask(base: Path, tmp_path: Path) -> None:
    kernels = make_package(base, "3")
    build_into(kernels.parent, tmp_path / "cache")
    bundle_root = kernels / "_brainevent"
    parts = [bundle_root, *bundle_root.rglob("*")]
    assert len(parts) >= 4
    for part in parts:
        mode = stat.S_IMODE(part.lstat().st_mode)
        assert not mode & 0o022, f"{part} is mode {mode:o}"
    mod = brainevent.load_cpp_file(kernels / "k.cpp", build_directory=tmp_path / "fresh", target_prefix="bt1")
    assert not mod.built_now and value(mod) == 3.0  # the bundle, trusted


def _attacker_bundle(base: Path, victim: Path) -> Path:
    """The attacker's bundle for the victim's sources: their own code, a manifest that matches.

    The attacker cannot run this interpreter, so it is built here and then handed to them
    (chown): what they could build on their own machine and copy over."""
    other = make_package(base / "attacker", "667")
    build_into(other.parent, base / "attacker-cache")
    (bundle,) = (other / "_brainevent").iterdir()
    manifest = json.loads((bundle / "manifest.json").read_text())
    (mine,) = (victim / "_brainevent").iterdir()
    mine_inputs = json.loads((mine / "manifest.json").read_text())["inputs"]
    manifest["inputs"]["bundle_headers"] = mine_inputs["bundle_headers"]
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    (base / "attacker").chmod(0o755)
    for p in [base / "attacker", *(base / "attacker").rglob("*")]:
        os.chown(p, ATTACKER, ATTACKER)
    return bundle


def test_a_bundle_another_user_swapped_in_is_refused(base: Path, tmp_path: Path) -> None:
    kernels = make_package(base, "3")
    build_into(kernels.parent, tmp_path / "cache")
    planted = _attacker_bundle(base, kernels)
    # The victim's _brainevent is left open (as an older version made it under umask 000),
    # so the attacker can put their bundle in its place.
    (kernels / "_brainevent").chmod(0o777)
    (mine,) = (kernels / "_brainevent").iterdir()
    subprocess.run(
        ["sh", "-c", f"mv {mine} {mine}.old; cp -r {planted} {mine}"],
        check=True, user=ATTACKER, group=ATTACKER, extra_groups=[],
    )  # fmt: skip
    with pytest.raises(CacheError, match="writable by other users"):
        brainevent.load_cpp_file(kernels / "k.cpp", build_directory=tmp_path / "fresh", target_prefix="bt2")
    (kernels / "_brainevent").chmod(0o755)  # closed again, but the swapped bundle is theirs
    with pytest.raises(CacheError, match="owned by uid 65534"):
        brainevent.load_cpp_file(kernels / "k.cpp", build_directory=tmp_path / "fresh", target_prefix="bt3")


def test_a_bundle_file_left_writable_by_others_is_refused(base: Path, tmp_path: Path) -> None:
    kernels = make_package(base, "3")
    build_into(kernels.parent, tmp_path / "cache")
    (bundle,) = (kernels / "_brainevent").iterdir()
    for part in (bundle / "manifest.json", next(bundle.glob("*.so")), bundle):
        part.chmod(0o777 if part.is_dir() else 0o666)
        with pytest.raises(CacheError, match=f"{part.name}.*writable by other users"):
            brainevent.load_cpp_file(
                kernels / "k.cpp", build_directory=tmp_path / "fresh", target_prefix="bt4"
            )
        part.chmod(0o755 if part.is_dir() else 0o644)
