"""Debug builds (``debug=True`` / ``BRAINEVENT_DEBUG=1``) check ``BE::Tensor::at<T>()``, and
the AddressSanitizer recipe of docs/troubleshooting.md catches a raw-pointer overrun."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent.config import ConfigError
from brainevent.errors import SpecError

# An off-by-one loop: it writes out[numel()], one element past the result.
OFF_BY_ONE = r"""
#include "brainevent/common.h"
// @BE off_by_one arg ret
void off_by_one(const BE::Tensor x, BE::Tensor out) {
  for (int64_t i = 0; i <= x.numel(); ++i) out.at<float>(i) = 1.0f;
}
// @BE add_one arg ret:like(x)
void add_one(const BE::Tensor x, BE::Tensor out) {
  for (int64_t i = 0; i < x.numel(); ++i) out.at<float>(i) = x.at<float>(i) + 1.0f;
}
"""


def test_debug_build_catches_an_out_of_bounds_write():
    mod = brainevent.load_cpp_inline(name="debug_oob", cpp_sources=OFF_BY_ONE, debug=True)
    x = jnp.arange(8, dtype=jnp.float32)
    with pytest.raises(jax.errors.JaxRuntimeError) as info:
        np.asarray(mod.off_by_one(x))
    text = str(info.value)
    for word in ("debug_oob.off_by_one", "debug_oob.cpp:5", "at(8)", "out of bounds", "8 elements"):
        assert word in text, (word, text)
    # The process lives on; a correct kernel of the same debug module works.
    np.testing.assert_allclose(np.asarray(jax.jit(mod.add_one)(x)), np.arange(8) + 1.0)


def test_debug_env_variable_turns_debug_on(monkeypatch):
    monkeypatch.setenv("BRAINEVENT_DEBUG", "1")
    mod = brainevent.load_cpp_inline(name="debug_env", cpp_sources=OFF_BY_ONE)
    with pytest.raises(jax.errors.JaxRuntimeError, match="out of bounds"):
        np.asarray(mod.off_by_one(jnp.ones(4, jnp.float32)))


@pytest.mark.unit
def test_debug_must_be_a_bool():
    with pytest.raises(SpecError, match=r"debug='yes' must be True, False or None"):
        brainevent.load_cpp_inline(name="debug_bad", cpp_sources=OFF_BY_ONE, debug="yes")


@pytest.mark.unit
def test_a_bad_debug_env_value_is_a_config_error(monkeypatch):
    monkeypatch.setenv("BRAINEVENT_DEBUG", "maybe")
    with pytest.raises(ConfigError) as info:
        brainevent.load_cpp_inline(name="debug_env_bad", cpp_sources=OFF_BY_ONE)
    assert info.value.variable == "BRAINEVENT_DEBUG" and info.value.value == "maybe"
    for word in ("BRAINEVENT_DEBUG='maybe'", "true/false", "yes/no"):
        assert word in str(info.value), (word, str(info.value))


def _gcc_runtime(name: str) -> str | None:
    found = subprocess.run(["g++", f"-print-file-name={name}"], capture_output=True, text=True).stdout.strip()
    return found if os.path.isabs(found) and os.path.exists(found) else None


def test_address_sanitizer_recipe_catches_a_raw_pointer_overrun(tmp_path: Path):
    asan, stdcxx = _gcc_runtime("libasan.so"), _gcc_runtime("libstdc++.so")
    if asan is None or stdcxx is None:
        pytest.skip("g++ has no libasan.so (install the compiler's libasan package)")
    script = tmp_path / "overrun.py"
    script.write_text(
        textwrap.dedent(r'''
        import jax.numpy as jnp, numpy as np, brainevent
        SRC = r"""
        #include "brainevent/common.h"
        // @BE overrun arg ret
        void overrun(const BE::Tensor x, BE::Tensor out) {
          float* po = out.data_ptr<float>();
          for (int64_t i = 0; i <= out.numel(); ++i) po[i] = 1.0f;
        }
        """
        mod = brainevent.load_cpp_inline(
            name="asan_overrun", cpp_sources=SRC,
            extra_cflags=["-fsanitize=address", "-fno-omit-frame-pointer", "-g"],
            extra_ldflags=["-fsanitize=address"])
        np.asarray(mod.overrun(jnp.zeros(1000, jnp.float32)))
        print("not caught")
    ''')
    )
    # A cache of its own: an ASan library elsewhere would abort any later process that loads it.
    env = dict(
        os.environ,
        LD_PRELOAD=f"{asan} {stdcxx}",
        ASAN_OPTIONS="detect_leaks=0",
        BRAINEVENT_CACHE_DIR=str(tmp_path / "cache"),
    )
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode != 0, done.stdout + done.stderr
    assert "heap-buffer-overflow" in done.stderr, done.stderr[-3000:]
    assert "asan_overrun.cpp:6" in done.stderr, done.stderr[-3000:]
    assert "not caught" not in done.stdout
