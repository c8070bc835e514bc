"""A module's identical build loaded from a second cache directory is a second library
instance, with its own static state: calls keep running the first instance, and
running_library() names it, so state kept in it (a launcher's kernel table) stays valid."""

from __future__ import annotations

import ctypes
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import brainevent
from brainevent.runtime.registry import running_library

COUNTER = r"""
#include "brainevent/common.h"
static int calls = 0;
extern "C" __attribute__((visibility("default"))) int be_test_calls() { return calls; }
// @BE bump ret
void bump(BE::Tensor out) { out.data_ptr<float>()[0] = static_cast<float>(++calls); }
"""


def test_the_first_instance_keeps_running_and_is_named(tmp_path: Path) -> None:
    first = brainevent.load_cpp_inline("same_bytes", COUNTER, build_directory=str(tmp_path / "a"))
    out = jax.ShapeDtypeStruct((1,), jnp.float32)
    assert float(np.asarray(first.bump(outs=out))[0]) == 1.0
    second = brainevent.load_cpp_inline("same_bytes", COUNTER, build_directory=str(tmp_path / "b"))
    assert second.path != first.path  # the same bytes, in another cache
    assert float(np.asarray(second.bump(outs=out))[0]) == 2.0  # the first instance counts on
    running = running_library("same_bytes.bump", "cpu")
    assert running is not None and running.be_test_calls() == 2
    assert ctypes.CDLL(str(first.path))._handle == running._handle
    assert ctypes.CDLL(str(second.path)).be_test_calls() == 0  # the second instance never ran
