"""Shared fixtures and the capability probes that gate test tiers.

Tiers: pure Python (always), host compiler (`g++`), nvcc (marker `nvcc`), GPU
(marker `gpu`, found through the CUDA driver API). Each is gated by a probe of
what the machine can do; BRAINEVENT_REQUIRE_ALL_TESTS=1 turns skips into failures.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

# Tests never touch the user's real cache: from the start of the session the default
# root is a private temporary directory (module-scoped fixtures run before autouse ones).
_SESSION_CACHE = Path(tempfile.mkdtemp(prefix="brainevent-test-cache-"))
os.environ["BRAINEVENT_CACHE_DIR"] = str(_SESSION_CACHE)


def _hypothesis_database_usable() -> bool:
    """Whether Hypothesis can keep its example database where it would by default.

    That is ``.hypothesis/`` under the working directory (or HYPOTHESIS_STORAGE_DIRECTORY):
    the nearest existing directory on the way must be writable, as Hypothesis checks.
    """
    home = os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY") or os.path.join(os.getcwd(), ".hypothesis")
    path = Path(home) / "examples"
    try:
        while not path.exists():
            path = path.parent
        return path.is_dir() and os.access(path, os.R_OK | os.W_OK | os.X_OK)
    except OSError:
        return False


def _configure_hypothesis() -> None:
    """No example database where none can be written, instead of a warning in every test.

    The container images run the suite as an unprivileged user in a directory it cannot
    write; Hypothesis would then warn once per property test and keep examples in memory.
    Where the default location works, Hypothesis' own default (and any profile) is kept.
    """
    try:
        from hypothesis import settings
    except ImportError:  # the test extra is not installed: the property tests skip
        return
    if _hypothesis_database_usable():
        return
    settings.register_profile("brainevent-no-database", parent=settings.default, database=None)
    settings.load_profile("brainevent-no-database")


_configure_hypothesis()


def _require_all() -> bool:
    return os.environ.get("BRAINEVENT_REQUIRE_ALL_TESTS", "").lower() in ("1", "true", "yes", "on")


def have_nvcc() -> str | None:
    try:
        from brainevent.toolchain.nvcc import find_nvcc
    except ImportError:
        return None
    try:
        return find_nvcc().path
    except Exception:
        return None


def have_gpu() -> bool:
    try:
        from brainevent.toolchain.cuda_driver import probe_devices
    except ImportError:
        return False
    probe = probe_devices()
    return bool(probe.available and probe.devices)


_probes: dict[str, object] = {}


def _probe(name: str) -> object:
    if name not in _probes:
        _probes[name] = have_nvcc() if name == "nvcc" else have_gpu()
    return _probes[name]


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_SESSION_CACHE, ignore_errors=True)


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker, reason in (
        ("nvcc", "no nvcc found (see `brainevent doctor`)"),
        ("gpu", "no CUDA device found through the CUDA driver API"),
    ):
        if item.get_closest_marker(marker) and not _probe(marker):
            if _require_all():
                pytest.fail(f"BRAINEVENT_REQUIRE_ALL_TESTS is set but {reason}")
            pytest.skip(reason)


@pytest.fixture(autouse=True)
def cpu_default_device(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Tests of C++ (CPU) modules compute on the CPU even where JAX's default is a GPU."""
    if request.node.get_closest_marker("gpu"):
        yield
        return
    import jax

    with jax.default_device(jax.devices("cpu")[0]):
        yield


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets the session's private cache root (shared across tests, so hits happen)."""
    monkeypatch.setenv("BRAINEVENT_CACHE_DIR", str(_SESSION_CACHE))
    return _SESSION_CACHE


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache root of this test's own, for tests that count builds."""
    root = tmp_path / "cache"
    monkeypatch.setenv("BRAINEVENT_CACHE_DIR", str(root))
    return root


@pytest.fixture(scope="session")
def gxx() -> str:
    path = shutil.which("g++") or shutil.which("c++")
    if path is None:
        pytest.skip("no host C++ compiler")
    return path
