"""Bad input met while building: every problem reaches the user as a typed error that says
what is wrong, never as a raw OSError or a misleading compiler message."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent import CacheError, CompileError, SpecError
from brainevent.build.includes import header_texts

DOCS = Path(__file__).resolve().parents[2] / "docs"

KERNEL = r"""
#include "brainevent/common.h"
void add{step}(const BE::Tensor x, BE::Tensor out) {{
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i] + {step}.0f;
}}
"""


def _kernel(step: int) -> str:
    return KERNEL.format(step=step)


# -- a line break in a path or flag ----------------------------------------------------


def test_line_break_in_a_source_directory_is_named(tmp_path: Path, fresh_cache: Path) -> None:
    folder = tmp_path / "two\nlines"
    folder.mkdir()
    (folder / "k.cpp").write_text(_kernel(1))
    with pytest.raises(SpecError, match=r"the build argument .*two\\nlines' contains a line break") as info:
        brainevent.load_cpp_file(folder / "k.cpp", ["add1"], auto_register=False)
    assert "two\nlines" in info.value.value
    # Nothing was published for the failed load.
    module_dir = fresh_cache / "v1" / "k"
    assert not [p for p in module_dir.iterdir() if p.is_dir() and not p.name.startswith(".")]


def test_line_break_in_a_cflag_is_named_before_compiling(fresh_cache: Path) -> None:
    with pytest.raises(SpecError, match=r"extra_cflags entry '-DX=1\\n-DY=2' contains a line break") as info:
        brainevent.load_cpp_inline("nl_flag", _kernel(1), ["add1"], extra_cflags=["-O2", "-DX=1\n-DY=2"])
    assert info.value.value == "-DX=1\n-DY=2"
    assert not (fresh_cache / "v1" / "nl_flag").exists()  # refused before the cache was touched


# -- the compile timeout ---------------------------------------------------------------


def test_compile_timeout_message_matches_the_docs(fresh_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A real g++ cannot build a module (binding included) in 50 ms.
    monkeypatch.setenv("BRAINEVENT_COMPILE_TIMEOUT", "0.05")
    with pytest.raises(CompileError) as info:
        brainevent.load_cpp_inline("tiny_timeout", _kernel(1), ["add1"], auto_register=False)
    message = str(info.value)
    assert message.startswith(
        "building module 'tiny_timeout' timed out: it did not finish within 0.05 s and was stopped"
    ), message
    assert "raise BRAINEVENT_COMPILE_TIMEOUT (now 0.05), in seconds" in message
    assert info.value.timeout_s == 0.05
    assert Path(info.value.log_path).is_file() and info.value.log_path in message
    # troubleshooting.md quotes the message with N for the limit.
    documented = re.search(
        r"`(did not finish within N s and was stopped)`", (DOCS / "troubleshooting.md").read_text()
    )
    assert documented is not None
    assert documented.group(1).replace("N", "0.05") in message
    assert "BRAINEVENT_COMPILE_TIMEOUT" in (DOCS / "troubleshooting.md").read_text()
    # With the default limit the same source builds.
    monkeypatch.delenv("BRAINEVENT_COMPILE_TIMEOUT")
    mod = brainevent.load_cpp_inline("tiny_timeout", _kernel(1), ["add1"])
    np.testing.assert_array_equal(np.asarray(mod.add1(jnp.zeros(3, jnp.float32))), np.ones(3))


# -- a read-only cache -----------------------------------------------------------------


@contextlib.contextmanager
def _read_only(root: Path) -> Iterator[None]:
    """Makes the cache tree read-only for this process: modes as a user, the immutable flag as root
    (root ignores modes)."""
    if os.getuid() != 0:
        modes = {p: p.stat().st_mode for p in [root, *root.rglob("*")]}
        for path in modes:
            path.chmod(modes[path] & ~0o222)
        try:
            yield
        finally:
            for path, mode in modes.items():
                path.chmod(mode)
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "-R", "+i", str(root)], capture_output=True).returncode != 0:
        subprocess.run([chattr or "chattr", "-R", "-i", str(root)], capture_output=True)
        pytest.skip(
            "running as root, and this filesystem or container cannot mark files immutable (chattr +i)"
        )
    try:
        yield
    finally:
        subprocess.run([chattr, "-R", "-i", str(root)], check=True)


@pytest.mark.parametrize("locks", ["1", "0"])
def test_read_only_cache_serves_hits_and_refuses_misses_clearly(
    fresh_cache: Path, monkeypatch: pytest.MonkeyPatch, locks: str
) -> None:
    monkeypatch.setenv("BRAINEVENT_USE_LOCKS", locks)
    name = f"ro_cache_{locks}"
    built = brainevent.load_cpp_inline(name, _kernel(2), ["add2"])
    assert built.built_now
    x = jnp.zeros(4, jnp.float32)
    with _read_only(fresh_cache):
        hit = brainevent.load_cpp_inline(name, _kernel(2), ["add2"])
        assert not hit.built_now and hit.path == built.path
        np.testing.assert_array_equal(np.asarray(hit.add2(x)), np.full(4, 2.0))
        module_dir = fresh_cache / "v1" / name
        before = sorted(p.name for p in module_dir.iterdir())
        with pytest.raises(CacheError) as info:
            brainevent.load_cpp_inline(name, _kernel(3), ["add3"])
        message = str(info.value)
        assert f"cannot build into the cache directory {module_dir}" in message, message
        assert "still load" in message and "BRAINEVENT_CACHE_DIR" in message
        assert info.value.path == str(module_dir)
        assert sorted(p.name for p in module_dir.iterdir()) == before
    # Once writable again, the miss builds.
    mod = brainevent.load_cpp_inline(name, _kernel(3), ["add3"])
    assert mod.built_now
    np.testing.assert_array_equal(np.asarray(mod.add3(x)), np.full(4, 3.0))


# -- special files behind #include ----------------------------------------------------


def test_include_of_a_proc_file_loads(tmp_path: Path, fresh_cache: Path) -> None:
    # The header scanner reads what a file's #include names (the file's directory is on
    # the search path); /proc/self/pagemap fails to read with EINVAL.
    source = tmp_path / "pagemap_user.cpp"
    source.write_text('#include "/proc/self/pagemap"\n' + _kernel(5))
    mod = brainevent.load_cpp_file(source, ["add5"])
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(mod.add5(jnp.asarray(x))), x + 5)


def test_header_scanner_skips_what_it_cannot_read(tmp_path: Path) -> None:
    (tmp_path / "real.h").write_text('#include "nested.h"\n')
    (tmp_path / "nested.h").write_text("int nested;\n")
    os.mkfifo(tmp_path / "fifo.h")  # opening it for reading would block
    (tmp_path / "dir.h").mkdir()
    includes = [
        "/proc/self/pagemap",  # EINVAL on read
        "/proc/self/mem",  # EIO on read
        "/dev/zero",  # a character device: endless
        "fifo.h",
        "dir.h",
        "x" * 5000 + ".h",  # ENAMETOOLONG
        "nul\0byte.h",  # ValueError from the OS layer
        "real.h",
    ]
    text = "".join(f'#include "{name}"\n' for name in includes)
    found = header_texts([(text, tmp_path)], [tmp_path])
    assert sorted(Path(p).name for p in found) == ["nested.h", "real.h"]


@pytest.mark.skipif(os.getuid() == 0, reason="root reads files whatever their mode")
def test_header_scanner_skips_unreadable_headers(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "h.h").write_text("int h;\n")
    (tmp_path / "locked.h").write_text("int locked;\n")
    (tmp_path / "locked.h").chmod(0)
    secret.chmod(0)
    try:
        found = header_texts([('#include "locked.h"\n#include "secret/h.h"\n', tmp_path)], [])
    finally:
        secret.chmod(0o700)
    assert found == {}
