"""A module's identical build loaded from a second cache directory is a second library
instance, with its own static state: calls must run the instance the caller holds."""

from __future__ import annotations

import ctypes
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import brainevent

COUNTER = r"""
#include "brainevent/common.h"
static int calls = 0;
extern "C" __attribute__((visibility("default"))) int be_test_calls() { return calls; }
// @BE bump ret
void bump(BE::Tensor out) { out.data_ptr<float>()[0] = static_cast<float>(++calls); }
"""


def test_calls_run_the_instance_loaded_last(tmp_path: Path) -> None:
    first = brainevent.load_cpp_inline("same_bytes", COUNTER, build_directory=str(tmp_path / "a"))
    out = jax.ShapeDtypeStruct((1,), jnp.float32)
    assert float(np.asarray(first.bump(outs=out))[0]) == 1.0
    second = brainevent.load_cpp_inline("same_bytes", COUNTER, build_directory=str(tmp_path / "b"))
    assert second.path != first.path  # the same bytes, in another cache
    assert float(np.asarray(second.bump(outs=out))[0]) == 1.0  # the second instance's own count
    assert ctypes.CDLL(str(second.path)).be_test_calls() == 1
    assert ctypes.CDLL(str(first.path)).be_test_calls() == 1  # the first saw no second call
    # loading the first again points the target back at it
    brainevent.load_cpp_inline("same_bytes", COUNTER, build_directory=str(tmp_path / "a"))
    assert float(np.asarray(first.bump(outs=out))[0]) == 2.0
