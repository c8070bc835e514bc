"""Another local user can never get code run, or a file written, through the cache.

The attacker's steps run as a second, unprivileged uid (``nobody``) when the suite runs
as root; elsewhere these tests skip. What the attacker plants is a real library whose
function returns a marker value: a load that ran it would return the marker.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent import CacheError
from brainevent.cache import admin
from brainevent.trust import forget

require_all = os.environ.get("BRAINEVENT_REQUIRE_ALL_TESTS", "").lower() in ("1", "true", "yes", "on")
ATTACKER = 65534  # nobody

if os.getuid() != 0:
    if require_all:
        raise RuntimeError("the cache trust tests need root to act as a second user")
    pytest.skip("acting as a second user needs root", allow_module_level=True)

SRC = str(Path(__file__).resolve().parents[2] / "src")

ADD1 = r"""
#include "brainevent/common.h"
// @BE add1 arg ret
void add1(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i] + ADDEND;
}
"""
MARKER = 667.0


@pytest.fixture(autouse=True)
def _forget_checks() -> None:
    forget()  # ancestors are checked once per process; these tests change them


def as_attacker(script: str) -> None:
    """Runs shell commands as the second user."""
    subprocess.run(["sh", "-c", script], check=True, user=ATTACKER, group=ATTACKER, extra_groups=[])


@pytest.fixture
def open_base() -> Iterator[Path]:
    """A directory the second user can reach (pytest's own tmp_path is private to root)."""
    base = Path(tempfile.mkdtemp(prefix="brainevent-trust-"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def sticky_dir(base: Path) -> Path:
    """A directory like /tmp: everyone may create entries, nobody may remove another's."""
    shared = base / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    return shared


def digest_tree(path: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")):
        h.update(str(p).encode())
        if p.is_file() and not p.is_symlink():
            h.update(p.read_bytes())
    return h.hexdigest()


def load(cache: Path, addend: str = "1.0f", **kw) -> brainevent.CompiledModule:
    return brainevent.load_cpp_inline(
        name="trust_add1",
        cpp_sources=ADD1,
        extra_cflags=[f"-DADDEND={addend}"],
        build_directory=str(cache),
        **kw,
    )


def value(mod: brainevent.CompiledModule) -> float:
    return float(np.asarray(mod.add1(jnp.ones(1, jnp.float32)))[0])


def test_cache_root_made_by_another_user_is_refused(open_base: Path) -> None:
    shared = sticky_dir(open_base)
    cache = shared / "cache"
    as_attacker(f"mkdir -m 777 {cache}")
    with pytest.raises(CacheError, match=r"owned by uid 65534, not by this user.*BRAINEVENT_CACHE_DIR"):
        load(cache)
    assert list(cache.iterdir()) == []  # nothing of ours was written there
    with pytest.raises(CacheError, match="owned by uid 65534"):
        list(admin.iter_entries(cache))


def test_world_writable_root_needs_the_sticky_bit(open_base: Path) -> None:
    cache = open_base / "cache"
    cache.mkdir(mode=0o777)
    cache.chmod(0o777)
    with pytest.raises(
        CacheError, match=r"writable by other users without the sticky bit \(mode 777\).*chmod 700"
    ):
        load(cache)
    cache.chmod(0o1777)  # sticky: others can add names, not replace ours
    as_attacker(f"mkdir {cache}/v1")  # ...but a directory of theirs on our path is refused
    with pytest.raises(CacheError, match=r"v1 is owned by uid 65534"):
        load(cache)


def test_parent_writable_by_others_is_refused(tmp_path: Path) -> None:
    parent = tmp_path / "open"
    parent.mkdir()
    parent.chmod(0o777)  # anyone could rename our cache away and put theirs in its place
    with pytest.raises(
        CacheError, match=r"lies above .*cache and is writable by other users without the sticky bit"
    ):
        load(parent / "cache")


def test_object_cache_poisoning_never_runs_foreign_code(tmp_path: Path, open_base: Path) -> None:
    """The attack: the other user swaps a cached object and removes the entry. The object is
    the shared FFI decoder, which every later build of the cache links."""
    cache = open_base / "cache"
    assert value(load(cache)) == 2.0
    evil = load(tmp_path / "evil-cache", addend=f"{MARKER - 1}f", auto_register=False)
    objects = next(cache.glob("v1/.decoder/objects"))
    kernel_object = next(objects.glob("*.o"))
    # Give the attacker the objects folder (as a cache root of theirs would), let them plant.
    for d in (cache, cache / "v1", objects.parent):
        d.chmod(0o755)
    evil_objects = sorted((tmp_path / "evil-cache").glob("v1/trust_add1/objects/*.o"))
    planted = open_base / "planted.o"
    shutil.copy(max(evil_objects, key=lambda p: p.stat().st_size), planted)
    planted.chmod(0o644)
    os.chown(objects, ATTACKER, ATTACKER)
    as_attacker(f"cp {planted} {kernel_object}.new && mv -f {kernel_object}.new {kernel_object}")
    for entry in cache.glob("v1/trust_add1/*/manifest.json"):
        shutil.rmtree(entry.parent)
    with pytest.raises(CacheError, match=r"objects is owned by uid 65534"):
        load(cache)
    del evil


@pytest.mark.parametrize("planted", ["owner", "failed.log"])
def test_planted_links_are_never_written_through(tmp_path: Path, planted: str) -> None:
    cache = tmp_path / "cache"
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    source = ADD1 if planted == "owner" else ADD1 + "\n#error deliberately broken\n"
    with contextlib.suppress(brainevent.CompileError):
        brainevent.load_cpp_inline(name="trust_link", cpp_sources=source, build_directory=str(cache))
    module_dir = cache / "v1" / "trust_link"
    key = next(p.name for p in module_dir.iterdir() if len(p.name) == 32 or p.name.endswith(".lock"))
    key = key.removesuffix(".lock")
    link = module_dir / f"{key}.{planted}"
    link.unlink(missing_ok=True)
    link.symlink_to(victim)
    with contextlib.suppress(brainevent.CompileError):
        brainevent.load_cpp_inline(
            name="trust_link", cpp_sources=source, build_directory=str(cache), force_rebuild=True
        )
    assert victim.read_text() == "precious\n"


def test_planted_lock_link_is_a_cache_error(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    load(cache)
    module_dir = cache / "v1" / "trust_add1"
    lock = next(module_dir.glob("*.lock"))
    lock.unlink()
    lock.symlink_to(lock.with_name("loop"))
    lock.with_name("loop").symlink_to(lock)  # a loop: opening it fails with ELOOP
    with pytest.raises(CacheError, match=r"cannot take the build lock .*\.lock"):
        load(cache, force_rebuild=True)


def test_modes_are_private_whatever_the_umask(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    script = textwrap.dedent(
        f"""
        import os; os.umask(0)
        import brainevent
        brainevent.load_cpp_inline(name="trust_umask", cpp_sources={ADD1!r}, extra_cflags=["-DADDEND=1.0f"],
                                   build_directory={str(cache)!r}, auto_register=False)
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, env=dict(os.environ, PYTHONPATH=SRC))
    for path in [cache, *cache.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        assert not mode & 0o077, f"{path} is mode {mode:o}"


def test_group_or_world_writable_dirs_of_ours_are_tightened(tmp_path: Path) -> None:
    """An older version made v1/ from the umask: ours, so made private again, not refused."""
    cache = tmp_path / "cache"
    load(cache)
    (cache / "v1").chmod(0o777)
    assert not load(cache).built_now
    assert stat.S_IMODE((cache / "v1").stat().st_mode) == 0o700


# -- fuzz: every path the cache uses, each way another user could have touched it ------------


def _paths(cache: Path) -> dict[str, Path]:
    module = cache / "v1" / "trust_add1"
    entry = next(p for p in module.iterdir() if p.is_dir() and len(p.name) == 32)
    objects = sorted((module / "objects").glob("*"))
    return {
        "root": cache,
        "v1": cache / "v1",
        "module": module,
        "entry": entry,
        "manifest": entry / "manifest.json",
        "library": next(entry.glob("*.so")),
        "build.log": entry / "build.log",
        "src": entry / "src",
        "objects": module / "objects",
        "object": next(p for p in objects if p.suffix == ".o"),
        "object record": next(p for p in objects if p.name.endswith(".deps.json")),
        "lock": next(module.glob("*.lock")),
        "alias": next(module.glob("*.alias")),
    }


def _foreign(path: Path, outside: Path) -> None:
    os.chown(path, ATTACKER, ATTACKER, follow_symlinks=False)


def _writable(path: Path, outside: Path) -> None:
    path.chmod(path.stat().st_mode | 0o022)


def _link(path: Path, outside: Path) -> None:
    target = outside / ("dir" if path.is_dir() else "evil.so" if path.suffix == ".so" else "file")
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()
    path.symlink_to(target)


MUTATIONS: dict[str, Callable[[Path, Path], None]] = {
    "foreign": _foreign,
    "writable": _writable,
    "link": _link,
}


@pytest.fixture(scope="module")
def built_cache(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("trust-fuzz")
    cache = base / "template"
    assert value(load(cache)) == 2.0
    evil = load(base / "evil", addend=f"{MARKER - 1}f", auto_register=False)
    return cache, Path(evil.path)


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
@pytest.mark.parametrize(
    "where",
    [
        "root",
        "v1",
        "module",
        "entry",
        "manifest",
        "library",
        "build.log",
        "src",
        "objects",
        "object",
        "object record",
        "lock",
        "alias",
    ],
)
def test_fuzz_planted_paths(
    tmp_path: Path, built_cache: tuple[Path, Path], where: str, mutation: str
) -> None:
    template, evil_library = built_cache
    cache = tmp_path / "cache"
    shutil.copytree(template, cache, symlinks=True)
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "file").write_text("someone else's file\n")
    shutil.copy(evil_library, outside / "evil.so")
    os.chown(outside / "evil.so", ATTACKER, ATTACKER)
    for p in [outside, *outside.rglob("*")]:
        os.chown(p, ATTACKER, ATTACKER)
    before = digest_tree(outside)
    MUTATIONS[mutation](_paths(cache)[where], outside)

    def attempt(op: Callable[[], object]) -> None:
        try:
            result = op()
        except CacheError:
            return  # a refusal, typed and explained
        if isinstance(result, brainevent.CompiledModule):
            assert value(result) == 2.0, "foreign code ran"

    attempt(lambda: load(cache))
    attempt(lambda: load(cache, force_rebuild=True))
    attempt(lambda: admin.prune(cache, max_size=0))
    attempt(lambda: admin.clear(cache))
    assert digest_tree(outside) == before, "a file outside the cache changed"
