"""The command line has one error boundary: whatever goes wrong (our errors, the filesystem's, a
reader that left the pipe, an option value out of range) is a message and an exit status, never a
Python traceback; option values are parsed by the parsers of the variables that mean the same."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": SRC, "JAX_PLATFORMS": "cpu", **env}
    return subprocess.run(
        [sys.executable, "-m", "brainevent", *args], env=full, capture_output=True, text=True, timeout=300
    )


def _refused(done: subprocess.CompletedProcess[str], status: int, message: str) -> None:
    assert done.returncode == status, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    assert message in done.stderr, done.stderr


def test_a_directory_where_a_file_goes_is_a_message(tmp_path: Path) -> None:
    (tmp_path / "compile_commands.json").mkdir()
    _refused(
        _cli("ide", str(tmp_path)), 1, f"brainevent ide: {tmp_path / 'compile_commands.json'}: Is a directory"
    )


def test_a_file_where_a_directory_goes_is_a_message(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    done = _cli("includes", "--cmake-dir", str(tmp_path / "afile" / "cmake"))
    _refused(done, 1, "brainevent includes: ")
    assert "afile" in done.stderr


def _read_only(directory: Path) -> list[str]:
    """A command prefix under which ``directory`` cannot be written."""
    if os.getuid() != 0:
        directory.chmod(0o555)
        return []
    if shutil.which("unshare") is None:  # root writes through modes: a read-only mount it is
        pytest.skip("not applicable: as root, a read-only checkout needs unshare to mount one")
    return ["unshare", "-m", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"', str(directory)]


def test_a_read_only_checkout_is_a_message(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    done = subprocess.run(
        [*_read_only(checkout), sys.executable, "-m", "brainevent", "ide", str(checkout)],
        env={**os.environ, "PYTHONPATH": SRC, "JAX_PLATFORMS": "cpu"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    _refused(done, 1, f"brainevent ide: {checkout / 'compile_commands.json'}: ")
    assert "Read-only file system" in done.stderr or "Permission denied" in done.stderr, done.stderr
    assert list(checkout.iterdir()) == []


def test_output_to_a_reader_that_left_is_no_traceback() -> None:
    """`brainevent includes | head -0`: the pipe is closed before anything is written."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "brainevent", "includes"],
            env={**os.environ, "PYTHONPATH": SRC, "JAX_PLATFORMS": "cpu"},
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 141 and done.stderr == "", done.stderr


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--max-size", "inf", "argument --max-size: size 'inf' is not valid"),
        ("--max-size", "1e400", "argument --max-size: size '1e400' is not valid"),
        ("--max-size", "9e18G", "must be a number from 0 up, below 2**63"),
        ("--max-size=-1G", None, "argument --max-size: size '-1G' must be a number from 0 up"),
        ("--older-than", "nan", "argument --older-than: age 'nan' is not valid"),
        ("--older-than", "infd", "argument --older-than: age 'infd' is not valid"),
    ],
)
def test_prune_option_values_out_of_range_are_usage_errors(
    tmp_path: Path, option: str, value: str | None, message: str
) -> None:
    given = [option] if value is None else [option, value]
    _refused(_cli("cache", "prune", *given, "--cache-dir", str(tmp_path)), 2, message)


def test_cache_dir_option_and_variable_share_their_parser(tmp_path: Path) -> None:
    _refused(
        _cli("cache", "list", "--cache-dir", "~nosuchuser_be/x"),
        2,
        "argument --cache-dir: --cache-dir='~nosuchuser_be/x' is not valid",
    )
    _refused(
        _cli("cache", "list", BRAINEVENT_CACHE_DIR="~nosuchuser_be/x"),
        1,
        "brainevent cache: BRAINEVENT_CACHE_DIR='~nosuchuser_be/x' is not valid",
    )
    done = _cli("cache", "list", "--cache-dir", "", BRAINEVENT_CACHE_DIR=str(tmp_path))
    assert done.returncode == 0 and f"cache: {tmp_path}" in done.stdout, done.stdout + done.stderr
