"""Shared fixtures and the capability probes that gate test tiers.

Tiers, one marker each: ``unit`` (pure Python), ``host`` (needs the host C++ compiler),
``nvcc`` and ``gpu`` (a CUDA device, found through the CUDA driver API). ``nvcc`` and
``gpu`` are written on the tests; ``host`` and ``unit`` are applied here at collection
(see ``_needs_host``), so ``pytest -m unit`` runs without any compiler. Each tier is gated
by a probe of what the machine can do; BRAINEVENT_REQUIRE_ALL_TESTS=1 turns skips into failures.

That holds for every skip, whatever raised it (a marker, ``pytest.skip``,
``importorskip``, ``skipif``): a skipped test fails, and a module skipped while it was
collected fails the session. The one exception is a skip whose reason starts with
"not applicable": the test checks a situation this machine is not in (a GPU is present,
so the no-GPU path cannot be seen; not a source checkout; not root), and another test
covers the situation it is in.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import types
from pathlib import Path

import pytest

# Tests never touch the user's real cache: from the start of each session the default
# root is a private temporary directory (module-scoped fixtures run before autouse ones).
# Made per session, not per import, so that sessions run one after another in one process
# (mutation testing forks them from a process that imported this file) never share it.
_session_cache = Path(tempfile.gettempdir()) / "brainevent-test-cache-unset"


def pytest_configure(config: pytest.Config) -> None:
    global _session_cache
    # The tiers this file applies, also where it runs without pyproject.toml's list of markers.
    known = {line.split(":")[0].strip() for line in config.getini("markers")}
    for tier, meaning in (("unit", "pure Python, no compiler"), ("host", "needs the host C++ compiler")):
        if tier not in known:
            config.addinivalue_line("markers", f"{tier}: {meaning}")
    _session_cache = Path(tempfile.mkdtemp(prefix="brainevent-test-cache-"))
    os.environ["BRAINEVENT_CACHE_DIR"] = str(_session_cache)
    # Run from a `unit` test of another session (tests of this file do so): without its stand-ins.
    path = os.environ.get("PATH", "").split(os.pathsep)
    os.environ["PATH"] = os.pathsep.join(p for p in path if not (Path(p) / _STAND_IN_LOG).exists())


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


def have_host_compiler() -> str | None:
    try:
        from brainevent.toolchain.host import find_host_compiler
    except ImportError:
        return None
    try:
        return find_host_compiler().path
    except Exception:
        return None


_PROBES = {"host": have_host_compiler, "nvcc": have_nvcc, "gpu": have_gpu}
_probes: dict[str, object] = {}


def _probe(name: str) -> object:
    if name not in _probes:
        _probes[name] = _PROBES[name]()
    return _probes[name]


# ------------------------------------------------------------------------ tiers

# What a test calls (directly, through a fixture, or through a helper of its module) that
# compiles C++ with the host compiler; and the same in the text of a script it runs.
_BUILD_NAMES = frozenset(
    {
        "load_cpp_inline",
        "load_cpp_file",
        "load_cpp_dir",
        "load_cuda_inline",
        "load_cuda_file",
        "load_cuda_dir",
        "numba_kernel",
        "def_numba_kernel",
    }
)
_BUILD_TEXT = re.compile(r"\b(load_cpp_\w+|load_cuda_\w+|numba_kernel)\(|\bbrainevent build\b")
_HOST_FIXTURES = frozenset({"gxx"})
_TIERS = ("unit", "host", "nvcc", "gpu")


def _builds(func: object, seen: set[int], depth: int = 0) -> bool:
    """Whether ``func`` (or a module-level helper or script text it names) compiles C++."""
    code = getattr(func, "__code__", None)
    if code is None or id(code) in seen or depth > 3:
        return False
    seen.add(id(code))
    scope = getattr(func, "__globals__", {})
    codes = [code]
    while codes:
        c = codes.pop()
        if _BUILD_NAMES.intersection(c.co_names) or {"brainevent", "build"} <= set(c.co_consts):
            return True  # a loader, or the command line `python -m brainevent build ...`
        for const in c.co_consts:
            if isinstance(const, types.CodeType):
                codes.append(const)
            elif isinstance(const, str) and _BUILD_TEXT.search(const):
                return True
        for name in c.co_names:
            value = scope.get(name)
            if isinstance(value, str) and _BUILD_TEXT.search(value):
                return True
            if isinstance(value, types.FunctionType) and _builds(value, seen, depth + 1):
                return True
            if isinstance(value, type) and value.__module__ == scope.get("__name__"):
                methods = [m for m in vars(value).values() if isinstance(m, types.FunctionType)]
                if any(_builds(m, seen, depth + 1) for m in methods):
                    return True  # a helper class of the test's module
    return False


def _needs_host(item: pytest.Item) -> bool:
    """A test needs the host compiler if it, a fixture it uses, or a helper they call builds."""
    if _HOST_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return True
    funcs = [getattr(item, "function", None)]
    fixtureinfo = getattr(item, "_fixtureinfo", None)
    if fixtureinfo is not None:
        for defs in fixtureinfo.name2fixturedefs.values():
            funcs += [d.func for d in defs]
    seen: set[int] = set()
    return any(_builds(func, seen) for func in funcs)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test gets one tier: its own marker, else ``host`` if it builds, else ``unit``."""
    for item in items:
        if any(item.get_closest_marker(tier) for tier in _TIERS):
            continue
        item.add_marker("host" if _needs_host(item) else "unit")


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_session_cache, ignore_errors=True)


NOT_APPLICABLE = "not applicable"
_collection_skips: list[str] = []


def _required_skip(report: pytest.CollectReport | pytest.TestReport) -> str | None:
    """The reason of a skip that BRAINEVENT_REQUIRE_ALL_TESTS turns into a failure, else None."""
    if not report.skipped or hasattr(report, "wasxfail") or not _require_all():
        return None
    longrepr = report.longrepr
    reason = str(longrepr[2] if isinstance(longrepr, tuple) else longrepr).removeprefix("Skipped: ")
    return None if reason.startswith(NOT_APPLICABLE) else reason


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    reason = _required_skip(report)
    if reason is not None:
        report.outcome = "failed"
        report.longrepr = f"BRAINEVENT_REQUIRE_ALL_TESTS is set, but this test was skipped: {reason}"


def pytest_collectreport(report: pytest.CollectReport) -> None:
    reason = _required_skip(report)
    if reason is not None:
        _collection_skips.append(f"{report.nodeid}: {reason}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _collection_skips and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _collection_skips:
        terminalreporter.section("BRAINEVENT_REQUIRE_ALL_TESTS is set, but modules were skipped")
        for line in _collection_skips:
            terminalreporter.line(line)


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker, reason in (
        ("host", "no host C++ compiler found (see `brainevent doctor`)"),
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


# While a `unit` test runs, PATH starts with stand-ins for the compilers that record the call
# and fail, so a test that compiles in a subprocess (where collection cannot see it) fails,
# telling its author to mark it `host`: the tier runs on a machine without compilers.
_COMPILERS = ("g++", "gcc", "c++", "cc", "clang++", "clang", "nvcc")
UNIT_RAN_A_COMPILER = "a `unit` test ran a compiler; mark it `host` (or `nvcc`): docs/testing.md"
_STAND_IN_LOG = "brainevent-unit-tier-stand-ins.log"


@pytest.fixture(scope="session")
def _compiler_stand_ins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("no-compilers")
    log = directory / _STAND_IN_LOG
    log.touch()
    for name in _COMPILERS:
        stand_in = directory / name
        # Single quotes: the message's backquotes must not run anything.
        stand_in.write_text(
            # `nvcc -dryrun` (how the nvcc search reads a wrapper script) compiles nothing: it is
            # refused, as an unusable nvcc, but not counted as a compile.
            f'#!/bin/sh\ncase "$1" in -dryrun) exit 1 ;; esac\n'
            f"echo \"{name} $*\" >> '{log}'\necho '{UNIT_RAN_A_COMPILER}' >&2\nexit 1\n"
        )
        stand_in.chmod(0o755)
    return log


@pytest.fixture(autouse=True)
def unit_tier_runs_no_compiler(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """A `unit` test finds only the stand-ins on PATH (and no CXX); it fails if it ran one."""
    if not request.node.get_closest_marker("unit") or os.name == "nt":
        yield
        return
    log = request.getfixturevalue("_compiler_stand_ins")
    monkeypatch.setenv("PATH", f"{log.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    for variable in ("CXX", "BRAINEVENT_CXX"):
        monkeypatch.delenv(variable, raising=False)
    before = log.stat().st_size
    yield
    with open(log) as fh:
        ran = fh.read()[before:]
    if ran:
        pytest.fail(f"{UNIT_RAN_A_COMPILER}. It ran: {ran.strip()}", pytrace=False)


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets the session's private cache root (shared across tests, so hits happen)."""
    monkeypatch.setenv("BRAINEVENT_CACHE_DIR", str(_session_cache))
    return _session_cache


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
