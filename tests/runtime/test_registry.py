"""The process-wide registry of FFI targets: register once, re-point on reload, say which.

Registration returns "registered", "unchanged" or "reloaded"; a reload makes the handler
XLA already holds run the new code, and going back makes it run its own code again.
(Reloading through the loaders is tested in tests/runtime/test_cpu_reload.py.)
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent import RegistrationError
from brainevent.runtime.registry import register_targets, registered_targets


def register_target(target: str, library: ctypes.CDLL, function: str, **kw: Any) -> str:
    """One target of the module these tests build (the registry registers a module's targets)."""
    return register_targets({function: target}, library, module="registry_fill", **kw)[target]


SOURCE = r"""
#include "brainevent/common.h"
// @BE fill ret
void fill(BE::Tensor out) {
    for (int64_t i = 0; i < out.numel(); ++i) out.data_ptr<float>()[i] = VAL;
}
"""


@pytest.fixture(scope="module")
def libraries() -> dict[int, tuple[ctypes.CDLL, str]]:
    """Two builds of one function (filling 1 and 2), not registered: (library, artifact key)."""
    built = {}
    for value in (1, 2):
        mod = brainevent.load_cpp_inline(
            name="registry_fill", cpp_sources=SOURCE, extra_cflags=[f"-DVAL={value}"], auto_register=False
        )
        built[value] = (ctypes.CDLL(str(mod.path), mode=ctypes.RTLD_LOCAL), mod.cache_dir.name)
    return built


def _filled(target: str) -> np.ndarray:
    return np.asarray(jax.ffi.ffi_call(target, jax.ShapeDtypeStruct((3,), jnp.float32))())


def _register(libraries: dict[int, tuple[ctypes.CDLL, str]], target: str, value: int, **kw: Any) -> str:
    library, key = libraries[value]
    kw.setdefault("graph_capture", False)  # the CPU's
    return register_target(
        target, library, "fill", platform="cpu", artifact_key=key, command_buffer=True, **kw
    )


def test_register_then_unchanged(libraries: dict[int, tuple[ctypes.CDLL, str]]) -> None:
    assert _register(libraries, "registry_a.fill", 1) == "registered"
    assert registered_targets()["registry_a.fill"] == "cpu"
    assert _register(libraries, "registry_a.fill", 1) == "unchanged"
    np.testing.assert_array_equal(_filled("registry_a.fill"), [1, 1, 1])


def test_reload_re_points_and_going_back_restores(
    libraries: dict[int, tuple[ctypes.CDLL, str]], caplog: pytest.LogCaptureFixture
) -> None:
    assert _register(libraries, "registry_b.fill", 1) == "registered"
    compiled = jax.jit(lambda: jax.ffi.ffi_call("registry_b.fill", jax.ShapeDtypeStruct((3,), jnp.float32))())
    np.testing.assert_array_equal(compiled(), [1, 1, 1])
    key2 = libraries[2][1]
    with caplog.at_level(logging.INFO, logger="brainevent.runtime"):
        assert _register(libraries, "registry_b.fill", 2) == "reloaded"
    messages = [r.getMessage() for r in caplog.records if r.name == "brainevent.runtime"]
    # On the CPU no CUDA graph can hold the old code: nothing is cleared (registry.py).
    assert messages == [f"target registry_b.fill now runs the reloaded module ({key2[:12]})"]
    assert compiled._cache_size() == 1  # type: ignore[attr-defined]
    np.testing.assert_array_equal(compiled(), [2, 2, 2])  # an executable compiled before
    assert compiled._cache_size() == 1, "the re-point must not make the executable recompile"  # type: ignore[attr-defined]
    np.testing.assert_array_equal(_filled("registry_b.fill"), [2, 2, 2])
    assert _register(libraries, "registry_b.fill", 2) == "unchanged"  # the reload is remembered
    assert _register(libraries, "registry_b.fill", 1) == "reloaded"
    np.testing.assert_array_equal(compiled(), [1, 1, 1])
    assert _register(libraries, "registry_b.fill", 1) == "unchanged"


def test_reload_on_the_cpu_keeps_every_other_executable(
    libraries: dict[int, tuple[ctypes.CDLL, str]],
) -> None:
    """Measured: an unrelated jitted function's next call costs what a cached call costs,
    not a recompile, after a module is re-pointed on the CPU."""
    import time

    unrelated = jax.jit(lambda x: jnp.sin(x) * 2 + jnp.cos(x) ** 2)
    x = jnp.arange(16.0)
    unrelated(x).block_until_ready()

    def first_call_after(action: Callable[[], Any]) -> float:
        action()
        started = time.perf_counter()
        unrelated(x).block_until_ready()
        return time.perf_counter() - started

    assert _register(libraries, "registry_m.fill", 1) == "registered"
    after_reload = first_call_after(lambda: _register(libraries, "registry_m.fill", 2))
    assert unrelated._cache_size() == 1  # type: ignore[attr-defined]
    after_clear = first_call_after(jax.clear_caches)  # what a reload cost before
    assert after_reload < after_clear / 3, (after_reload, after_clear)
    np.testing.assert_array_equal(_filled("registry_m.fill"), [2, 2, 2])


def test_reload_where_graphs_may_hold_the_old_code_drops_executables(
    libraries: dict[int, tuple[ctypes.CDLL, str]], caplog: pytest.LogCaptureFixture
) -> None:
    """A platform that captures graphs (CUDA), with a handler allowed in them: executables
    compiled before the re-point are dropped, as a captured graph would replay the old code."""
    assert _register(libraries, "registry_g.fill", 1, graph_capture=True) == "registered"
    compiled = jax.jit(lambda: jax.ffi.ffi_call("registry_g.fill", jax.ShapeDtypeStruct((3,), jnp.float32))())
    compiled()
    with caplog.at_level(logging.INFO, logger="brainevent.runtime"):
        assert _register(libraries, "registry_g.fill", 2, graph_capture=True) == "reloaded"
    assert any("cleared JAX's compiled executables" in r.getMessage() for r in caplog.records)
    assert compiled._cache_size() == 0  # type: ignore[attr-defined]
    np.testing.assert_array_equal(compiled(), [2, 2, 2])


def test_registration_failure_is_a_registration_error(
    libraries: dict[int, tuple[ctypes.CDLL, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # This jaxlib accepts a second handler under a name; others raise. Either way, a failure
    # from JAX becomes a RegistrationError that names the target and the way out.
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("duplicate custom call target")

    monkeypatch.setattr(jax.ffi, "register_ffi_target", refuse)
    with pytest.raises(RegistrationError) as caught:
        _register(libraries, "registry_c.fill", 1)
    assert str(caught.value) == (
        "could not register FFI target 'registry_c.fill' on platform 'cpu': duplicate custom call target. "
        "Another library may already use that name; pass target_prefix= to pick another."
    )
    assert caught.value.data == {"target": "registry_c.fill", "platform": "cpu"}
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert "registry_c.fill" not in registered_targets()


def test_the_handler_registered_matches_command_buffer_use(
    libraries: dict[int, tuple[ctypes.CDLL, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # allow_cuda_graph picks which exported handler XLA gets: with or without the trait.
    from brainevent.headers import handler_symbol

    seen: list[tuple[str, object, str, int]] = []
    real: Callable[..., Any] = jax.ffi.register_ffi_target

    def record(name: str, capsule: object, platform: str, api_version: int) -> None:
        seen.append((name, capsule, platform, api_version))

    monkeypatch.setattr(jax.ffi, "register_ffi_target", record)
    library = libraries[1][0]
    for graph in (True, False):
        register_target(
            f"registry_d{int(graph)}.fill",
            library,
            "fill",
            platform="cpu",
            artifact_key=libraries[1][1],
            command_buffer=graph,
            graph_capture=False,
        )
    monkeypatch.setattr(jax.ffi, "register_ffi_target", real)
    assert [(name, platform, api) for name, _, platform, api in seen] == [
        ("registry_d1.fill", "cpu", 1),
        ("registry_d0.fill", "cpu", 1),
    ]
    for (_, capsule, _, _), graph in zip(seen, (True, False), strict=True):
        expected = jax.ffi.pycapsule(getattr(library, handler_symbol("fill", command_buffer=graph)))
        assert _capsule_pointer(capsule) == _capsule_pointer(expected)
    assert handler_symbol("fill", command_buffer=True) != handler_symbol("fill", command_buffer=False)


def _capsule_pointer(capsule: object) -> int:
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return int(get(capsule, None) or 0)
