"""The shared file helpers: atomic private writes, file identity, content digests."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from brainevent.fileio import atomic_write, copy_file, file_identity, make_dir, sha256_file, size_and_mtime


def test_atomic_write_replaces_a_planted_link_instead_of_writing_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"untouched")
    target = tmp_path / "out.json"
    target.symlink_to(victim)
    atomic_write(target, b"new")
    assert not target.is_symlink() and target.read_bytes() == b"new"
    assert victim.read_bytes() == b"untouched"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp left


def test_atomic_write_leaves_no_temp_file_when_it_fails(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()  # a directory cannot be replaced by a file
    with pytest.raises(OSError):
        atomic_write(tmp_path / "taken", b"data")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_file_identity_follows_links_and_changes_when_the_file_is_rewritten(tmp_path: Path) -> None:
    real = tmp_path / "tool"
    real.write_bytes(b"v1")
    os.utime(real, ns=(1_000_000_000, 1_000_000_000))
    link = tmp_path / "link"
    link.symlink_to(real)
    first = file_identity(link)
    assert first == f"{os.path.realpath(real)}:2:1000000000" == file_identity(real)
    real.write_bytes(b"v22")
    assert file_identity(link) != first
    assert size_and_mtime(real)[0] == 3


def test_a_missing_file_has_an_identity_unless_asked_to_raise(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    assert file_identity(gone) == f"{os.path.realpath(gone)}:missing"
    with pytest.raises(FileNotFoundError, match="gone"):
        file_identity(gone, missing_ok=False)


def test_sha256_file_is_the_digest_of_the_contents(tmp_path: Path) -> None:
    path = tmp_path / "blob"
    data = os.urandom(3 << 20)  # more than one read block
    path.write_bytes(data)
    assert sha256_file(path) == hashlib.sha256(data).hexdigest()


@pytest.fixture
def umask_000() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def test_the_writer_sets_modes_exactly_whatever_the_umask(tmp_path: Path, umask_000: None) -> None:
    atomic_write(tmp_path / "private", b"x")
    atomic_write(tmp_path / "shared", "text", mode=0o644)
    make_dir(tmp_path / "a" / "b" / "c", parents=True)
    make_dir(tmp_path / "published", mode=0o755)
    copy_file(tmp_path / "shared", tmp_path / "copy", mode=0o755)
    modes = {p.relative_to(tmp_path).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in tmp_path.rglob("*")}
    assert modes == {
        "private": 0o600,
        "shared": 0o644,
        "a": 0o700,
        "a/b": 0o700,
        "a/b/c": 0o700,
        "published": 0o755,
        "copy": 0o755,
    }
    assert (tmp_path / "shared").read_text() == (tmp_path / "copy").read_text() == "text"
    os.umask(0o277)  # the other way: bits the umask takes away come back
    atomic_write(tmp_path / "tight", b"x", mode=0o644)
    assert stat.S_IMODE((tmp_path / "tight").stat().st_mode) == 0o644


def test_the_writer_can_leave_a_link_alone_and_say_so(tmp_path: Path) -> None:
    database = tmp_path / "build" / "compile_commands.json"
    database.parent.mkdir()
    database.write_text("[cmake's]")
    link = tmp_path / "compile_commands.json"
    link.symlink_to("build/compile_commands.json")
    with pytest.raises(FileExistsError, match=r"symbolic link \(to build/compile_commands.json\)") as info:
        atomic_write(link, "[ours]", replace_link=False)
    assert info.value.filename == str(link)
    assert link.is_symlink() and database.read_text() == "[cmake's]"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build", "compile_commands.json"]  # no temp


def test_make_dir_takes_no_link_or_file_for_the_directory(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "link").symlink_to(elsewhere)
    with pytest.raises(NotADirectoryError, match="symbolic link"):
        make_dir(tmp_path / "link")
    assert list(elsewhere.iterdir()) == []
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileExistsError):
        make_dir(tmp_path / "file")
    with pytest.raises(NotADirectoryError):
        make_dir(tmp_path / "file" / "below", parents=True)
    existing = tmp_path / "existing"
    existing.mkdir(mode=0o750)
    make_dir(existing)  # there already: left as it is
    assert stat.S_IMODE(existing.stat().st_mode) == 0o750 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
