"""Measured selection: benchmark(remember=True) keeps each winner as a cache entry, a fresh
process uses it without measuring (counted), a changed kernel source makes it stale, entries
another user could have written or that were changed after publishing are never used, and
`brainevent cache prune` removes them."""

from __future__ import annotations

import itertools
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent import config
from brainevent.cli import main as cli_main
from brainevent.custom_kernel import BenchmarkConfig, XLACustomKernel, remembered

SRC = str(Path(__file__).resolve().parents[2] / "src")
_ids = itertools.count()


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "cache"
    monkeypatch.setenv("BRAINEVENT_CACHE_DIR", str(root))
    config.clear_backends()
    yield root
    config.clear_backends()


def spec_of(v: Any) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(v.shape, v.dtype)


# Steps of the slow path: enough that the fast path wins by far more than a loaded host's noise.
SLOW_STEPS = 40000


def looped(v: Any, steps: int) -> Any:
    """2 * v the long way round: ``steps`` additions of 2 * v / steps."""
    return jax.lax.fori_loop(0, steps, lambda i, acc: acc + v * (2.0 / steps), jnp.zeros_like(v))


def shape_dependent(calls: dict[str, int]) -> XLACustomKernel:
    """Backend "a" is slow on 1000 elements and fast on 2000; "b" the other way round."""

    def gen_a(outs: Any) -> Any:
        calls["a"] += 1
        return lambda v: (looped(v, SLOW_STEPS) if outs[0].shape[0] == 1000 else v * 2.0,)

    def gen_b(outs: Any) -> Any:
        calls["b"] += 1
        return lambda v: (looped(v, SLOW_STEPS) if outs[0].shape[0] == 2000 else v * 2.0,)

    op = XLACustomKernel(f"rem_shapes_{next(_ids)}", outs=spec_of)
    op.def_kernel("a", "cpu", gen_a)
    op.def_kernel("b", "cpu", gen_b)
    return op


def configs() -> list[BenchmarkConfig]:
    return [
        BenchmarkConfig("n=1000", (np.arange(1000, dtype=np.float32),)),
        BenchmarkConfig("n=2000", (np.arange(2000, dtype=np.float32),)),
    ]


def test_each_shape_gets_its_own_winner_and_lowerings_use_it(private_cache: Path) -> None:
    calls = {"a": 0, "b": 0}
    op = shape_dependent(calls)
    result = op.benchmark(platform="cpu", n_warmup=1, n_runs=7, configs=configs(), remember=True)
    assert not result.remembered
    assert result.fastest("n=1000").backend == "b" and result.fastest("n=2000").backend == "a"
    path = choice_file(op, private_cache)
    assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0  # private, as every cache entry
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    calls.update(a=0, b=0)
    small, large = np.ones(1000, np.float32), np.ones(2000, np.float32)
    np.testing.assert_allclose(jax.jit(op)(small), 2 * small, rtol=1e-5)
    assert calls == {"a": 0, "b": 1}  # "a" is the default, but "b" won on 1000 elements
    np.testing.assert_allclose(jax.jit(op)(large), 2 * large, rtol=1e-5)
    assert calls == {"a": 1, "b": 1}
    other = np.ones(3000, np.float32)  # never measured: the default
    jax.jit(op)(other)
    assert calls == {"a": 2, "b": 1}


def test_set_default_the_global_choice_and_backend_beat_a_remembered_choice() -> None:
    calls = {"a": 0, "b": 0}
    op = shape_dependent(calls)
    op.benchmark(platform="cpu", n_warmup=1, n_runs=7, configs=configs()[:1], remember=True)
    small = np.ones(1000, np.float32)
    calls.update(a=0, b=0)
    jax.jit(op)(small)
    assert calls == {"a": 0, "b": 1}
    op(small, backend="a")
    assert calls == {"a": 1, "b": 1}
    brainevent.config.set_backend("cpu", "a")
    jax.jit(op)(small)
    assert calls == {"a": 2, "b": 1}
    brainevent.config.clear_backends()
    op.set_default("cpu", "a")  # a choice made in code pins the default for every shape
    jax.jit(op)(small)
    assert calls == {"a": 3, "b": 1}


def test_benchmark_set_default_with_remember_leaves_measured_shapes_to_their_winner() -> None:
    calls = {"a": 0, "b": 0}
    op = shape_dependent(calls)
    result = op.benchmark(
        platform="cpu", n_warmup=1, n_runs=7, configs=configs()[:1], remember=True, set_default=True
    )
    assert result.chosen == "b" and op.get_default("cpu") == "b"
    calls.update(a=0, b=0)
    jax.jit(op)(np.ones(2000, np.float32))  # not measured: the new default
    assert calls == {"a": 0, "b": 1}


# -- a fresh process ---------------------------------------------------------------------------

KERNELS = """
import jax
import jax.numpy as jnp
import numpy as np

import brainevent

CALLS = {"slow": 0, "fast": 0}
STEPS = 500


def slow(outs):
    CALLS["slow"] += 1

    def kernel(v):
        return (jax.lax.fori_loop(0, STEPS, lambda i, acc: acc + v * (2.0 / STEPS), jnp.zeros_like(v)),)

    return kernel


def fast(outs):
    CALLS["fast"] += 1
    return lambda v: (v * 2.0,)


def make():
    spec = lambda v: jax.ShapeDtypeStruct(v.shape, v.dtype)
    op = brainevent.XLACustomKernel("remembered_double", outs=spec)
    op.def_kernel("slow", "cpu", slow)  # the default: defined first
    op.def_kernel("fast", "cpu", fast)
    op.def_benchmark_data(
        lambda *, platform: [brainevent.BenchmarkConfig("n=20k", (np.arange(20_000, dtype=np.float32),))]
    )
    return op
"""

DRIVER = """
import json
import sys

import jax
import numpy as np

import brainevent.custom_kernel.benchmark as bench
import kernels

timed = []
original = bench.time_interleaved
bench.time_interleaved = lambda *a, **k: timed.append(1) or original(*a, **k)
op = kernels.make()
if sys.argv[1] == "benchmark":
    result = op.benchmark(platform="cpu", n_warmup=1, n_runs=7, remember=True)
    best = result.fastest("n=20k").backend
    remembered = result.remembered
else:
    x = np.arange(20_000, dtype=np.float32)
    np.testing.assert_allclose(jax.jit(op)(x), 2 * x, rtol=1e-4)
    best, remembered = None, None
found = {"timed": len(timed), "calls": kernels.CALLS, "best": best, "remembered": remembered}
print("RESULT " + json.dumps(found))
"""


def fresh_process(directory: Path, cache: Path, mode: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=f"{SRC}{os.pathsep}{directory}", BRAINEVENT_CACHE_DIR=str(cache))
    env.update(JAX_PLATFORMS="cpu", PYTHONDONTWRITEBYTECODE="1")  # kernels.py is rewritten within a second
    done = subprocess.run(
        [sys.executable, str(directory / "driver.py"), mode],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    result: dict[str, Any] = json.loads(line[len("RESULT ") :])
    return result


def test_a_fresh_process_uses_the_remembered_winner_without_measuring(
    tmp_path: Path, private_cache: Path
) -> None:
    (tmp_path / "kernels.py").write_text(KERNELS)
    (tmp_path / "driver.py").write_text(DRIVER)
    first = fresh_process(tmp_path, private_cache, "benchmark")
    assert first["timed"] == 1 and first["best"] == "fast" and not first["remembered"], first
    # A new process: the same benchmark is answered from the cache, with no timing and no kernel built...
    again = fresh_process(tmp_path, private_cache, "benchmark")
    assert again == {"timed": 0, "calls": {"slow": 0, "fast": 0}, "best": "fast", "remembered": True}, again
    # ...and a call lowers the remembered winner, not the default ("slow", defined first).
    call = fresh_process(tmp_path, private_cache, "call")
    assert call["calls"] == {"slow": 0, "fast": 1} and call["timed"] == 0, call


def test_a_changed_kernel_source_makes_the_choice_stale(tmp_path: Path, private_cache: Path) -> None:
    (tmp_path / "kernels.py").write_text(KERNELS)
    (tmp_path / "driver.py").write_text(DRIVER)
    assert fresh_process(tmp_path, private_cache, "benchmark")["best"] == "fast"
    # A comment or a blank line is not a change of source.
    (tmp_path / "kernels.py").write_text(KERNELS.replace("def fast(outs):", "\n# faster\ndef fast(outs):"))
    assert fresh_process(tmp_path, private_cache, "benchmark")["timed"] == 0
    # A changed constant the slow kernel reads through its module globals is.
    (tmp_path / "kernels.py").write_text(KERNELS.replace("STEPS = 500", "STEPS = 400"))
    stale = fresh_process(tmp_path, private_cache, "call")
    assert stale["calls"] == {"slow": 1, "fast": 0}  # back to the default
    measured = fresh_process(tmp_path, private_cache, "benchmark")
    assert measured["timed"] == 1 and not measured["remembered"]
    assert fresh_process(tmp_path, private_cache, "call")["calls"] == {"slow": 0, "fast": 1}


# -- trust -----------------------------------------------------------------------------------------


def choice_file(op: XLACustomKernel, private_cache: Path) -> Path:
    """The published record of the winner on 1000 float32 elements."""
    store = remembered.store_for(op.name, private_cache)
    parts = remembered.choice_parts("cpu", "cpu", ["float32[1000]"], ["float32[1000]"])
    return store.entry_dir(remembered.key_of(parts)) / remembered.ARTIFACT


def remembered_file(private_cache: Path) -> tuple[XLACustomKernel, dict[str, int], Path]:
    calls = {"a": 0, "b": 0}
    op = shape_dependent(calls)
    op.benchmark(platform="cpu", n_warmup=1, n_runs=5, configs=configs()[:1], remember=True)
    calls.update(a=0, b=0)
    return op, calls, choice_file(op, private_cache)


def test_a_choice_others_could_write_is_ignored_with_a_warning(private_cache: Path) -> None:
    op, calls, path = remembered_file(private_cache)
    os.chmod(path, 0o666)
    with pytest.warns(UserWarning, match=r"ignoring a remembered benchmark result: .*writable by others?"):
        jax.jit(op)(np.ones(1000, np.float32))
    assert calls == {"a": 1, "b": 0}  # the default: the entry was not trusted


def test_a_choice_changed_after_publishing_is_not_used(private_cache: Path) -> None:
    op, calls, path = remembered_file(private_cache)
    record = json.loads(path.read_text())
    assert record["backend"] == "b"
    record["config"] = "edited"  # still a valid record naming "b", but not the one published
    path.write_text(json.dumps(record))
    jax.jit(op)(np.ones(1000, np.float32))
    assert calls == {"a": 1, "b": 0}  # its checksum no longer matches the manifest's


def test_a_symbolic_link_in_place_of_the_choice_is_not_followed(tmp_path: Path, private_cache: Path) -> None:
    op, calls, path = remembered_file(private_cache)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(elsewhere)
    with pytest.warns(UserWarning, match="not a regular file"):
        jax.jit(op)(np.ones(1000, np.float32))
    assert calls == {"a": 1, "b": 0}
    # Measuring again replaces the entry with one of our own, and leaves the link's target alone.
    op.benchmark(platform="cpu", n_warmup=1, n_runs=5, configs=configs()[:1], remember=True)
    assert path.is_file() and not path.is_symlink()
    assert json.loads(elsewhere.read_text())["primitive"] == op.name


def test_a_damaged_choice_is_ignored_and_measured_again(private_cache: Path) -> None:
    op, calls, path = remembered_file(private_cache)
    path.write_text("{ not json")
    jax.jit(op)(np.ones(1000, np.float32))
    assert calls == {"a": 1, "b": 0}
    result = op.benchmark(platform="cpu", n_warmup=1, n_runs=5, configs=configs()[:1], remember=True)
    assert not result.remembered and json.loads(path.read_text())["backend"] == "b"  # measured again


def test_cache_prune_and_clear_remove_remembered_entries(
    private_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    op, calls, path = remembered_file(private_cache)
    assert cli_main(["cache", "list"]) == 0
    listed = capsys.readouterr().out
    assert "float32[1000] -> float32[1000]: b" in listed and "2 entries" in listed  # the choice and the run
    assert cli_main(["cache", "prune"]) == 0  # the newest of each: both kept
    assert path.exists()
    assert cli_main(["cache", "prune", "--older-than", "0s"]) == 0
    assert "removed 2 entries" in capsys.readouterr().out and not path.exists()
    jax.jit(op)(np.ones(1000, np.float32))
    assert calls == {"a": 1, "b": 0}
    result = op.benchmark(platform="cpu", n_warmup=1, n_runs=5, configs=configs()[:1], remember=True)
    assert not result.remembered and path.exists()


# -- the command line ----------------------------------------------------------------------------


def test_cli_lists_and_clears_the_remembered_choices(
    private_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["choices"]) == 0
    assert "0 remembered choice(s)" in capsys.readouterr().out
    op, _, path = remembered_file(private_cache)
    assert cli_main(["choices"]) == 0
    out = capsys.readouterr().out
    assert f"{op.name} [cpu, cpu] float32[1000] -> float32[1000]: b (" in out
    assert "; a " in out and "1 remembered choice(s)" in out
    assert cli_main(["choices", "clear"]) == 0
    assert "removed 2 remembered entries" in capsys.readouterr().out and not path.exists()
    calls = {"a": 0, "b": 0}
    again = shape_dependent(calls)
    jax.jit(again)(np.ones(1000, np.float32))
    assert calls == {"a": 1, "b": 0}


def test_describe_names_every_platform_shape_and_timing(private_cache: Path) -> None:
    op, _, _ = remembered_file(private_cache)
    text = "\n".join(remembered.describe(private_cache))
    assert f"{op.name} [cpu, cpu]" in text and "measured 20" in text


def test_operand_signatures_find_binds_inside_jit_scan_and_cond() -> None:
    op = shape_dependent({"a": 0, "b": 0})

    def call(x: Any, backend: str | None = None) -> Any:
        inner = jax.jit(lambda v: op(v[:10], backend=backend))
        scanned = jax.lax.scan(lambda c, v: (c, op(v, backend=backend)), 0.0, x.reshape(4, 250))[1]
        branch = jax.lax.cond(True, lambda v: op(v, backend=backend), lambda v: v, x)
        return inner(x), scanned, branch

    found = remembered.operand_signatures(call, op.primitive, (np.ones(1000, np.float32),), {})
    assert sorted(found) == sorted([[[f"float32[{n}]"], [f"float32[{n}]"]] for n in (10, 250, 1000)])
