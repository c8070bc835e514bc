"""The shared file helpers: atomic private writes, file identity, content digests."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from brainevent.fileio import atomic_write, file_identity, sha256_file, size_and_mtime


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
