"""Timing the backends of one primitive against each other, in interleaved rounds (each round
runs every backend once, in a rotated order) so that a slow drift of the machine lands on all of
them alike. A backend's time is the median of its rounds; its noise is 1.4826 x MAD (a standard
deviation that a few outlier rounds do not inflate)."""

from __future__ import annotations

import functools
import logging
import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..errors import KernelCallError

TABLE_HEADER = ("config", "platform", "backend", "median ms", "noise ms", "mean ms", "min ms", "rounds")
FAILED = dict.fromkeys(("mean_ms", "std_ms", "min_ms"), math.nan)  # a backend that did not run
MAD_TO_SIGMA = 1.4826  # MAD of a normal distribution times this is its standard deviation
log = logging.getLogger(__name__)


@dataclass
class BenchmarkConfig:
    """One set of inputs to time: ``args`` go to the call positionally, ``kernel_kwargs`` as
    keywords; ``data_kwargs`` only label the row (for example the sizes that made ``args``)."""

    name: str
    args: tuple[Any, ...]
    kernel_kwargs: dict[str, Any] = field(default_factory=dict)
    data_kwargs: dict[str, Any] = field(default_factory=dict)

    def put_args(self, device: Any = None) -> BenchmarkConfig:
        """A copy whose array arguments live on ``device`` (JAX's default when None)."""
        import jax

        args = tuple(jax.block_until_ready(jax.device_put(a, device)) for a in self.args)
        return BenchmarkConfig(self.name, args, self.kernel_kwargs, self.data_kwargs)


@dataclass
class BenchmarkRecord:
    """One backend on one configuration. Times are per call, in milliseconds."""

    platform: str
    backend: str
    label: str
    mean_ms: float
    std_ms: float
    min_ms: float
    throughput: float | None
    success: bool
    error: str | None
    kernel_kwargs: dict[str, Any]
    data_kwargs: dict[str, Any]
    median_ms: float = math.nan
    noise_ms: float = math.nan
    rounds: int = 0


def summarize(times_s: Sequence[float]) -> dict[str, float]:
    """Per-call statistics in milliseconds of per-call times in seconds."""
    ms = np.asarray(times_s, dtype=np.float64) * 1e3
    median = float(np.median(ms))
    stats = {"mean_ms": ms.mean(), "std_ms": ms.std(), "min_ms": ms.min(), "median_ms": median}
    stats["noise_ms"] = MAD_TO_SIGMA * np.median(np.abs(ms - median))
    return {k: float(v) for k, v in stats.items()}


def time_interleaved(
    runners: dict[str, Callable[[], Any]], n_runs: int, n_batch_per_run: int = 1
) -> dict[str, list[float]]:
    """Per-call seconds of each runner over ``n_runs`` rounds; round ``r`` starts at runner ``r``."""
    import jax

    names = list(runners)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(n_runs):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            run = runners[name]
            start = time.perf_counter()
            for _ in range(n_batch_per_run):
                out = run()
            jax.block_until_ready(out)
            times[name].append((time.perf_counter() - start) / n_batch_per_run)
    return times


def benchmark_function(
    fn: Callable[..., Any], n_warmup: int, n_runs: int, n_batch_per_run: int = 1, data: tuple[Any, ...] = ()
) -> tuple[float, float, float, float, Any]:
    """Times ``fn(*data)`` alone: ``(mean, std, min, max, output)``, per call, in seconds."""
    import jax

    output = jax.block_until_ready(fn(*data))
    for _ in range(n_warmup):
        jax.block_until_ready(fn(*data))
    times = np.asarray(time_interleaved({"fn": lambda: fn(*data)}, n_runs, n_batch_per_run)["fn"])
    return float(times.mean()), float(times.std()), float(times.min()), float(times.max()), output


@dataclass(repr=False)
class BenchmarkResult:
    """The records of one ``XLACustomKernel.benchmark()`` run, with the table and the winner."""

    records: list[BenchmarkRecord]
    primitive_name: str = ""
    chosen: str | None = None  # the backend benchmark(set_default=True) made the default
    remembered: bool = False  # True when benchmark(remember=True) returned a stored run untimed

    def fastest(self, label: str | None = None) -> BenchmarkRecord | None:
        """The successful record with the lowest median (of ``label``'s configuration if given)."""
        ok = [r for r in self.records if r.success and (label is None or r.label == label)]
        return min(ok, key=lambda r: r.median_ms) if ok else None

    def best_backend(self) -> str | None:
        """The backend with the lowest geometric mean of its medians over every configuration;
        a backend that failed any configuration is not eligible."""
        scores: dict[str, list[float]] = {}  # every backend has one record per configuration
        for r in self.records:
            ok = r.success and r.median_ms > 0
            scores.setdefault(r.backend, []).append(math.log(r.median_ms) if ok else math.inf)
        eligible = {b: sum(v) / len(v) for b, v in scores.items() if math.inf not in v}
        return min(eligible, key=lambda b: eligible[b]) if eligible else None

    def table(self) -> str:
        """A fixed-width table: one row per (configuration, backend); ``*`` marks each
        configuration's fastest, ``x best`` is the median relative to it."""
        title = f"Benchmark of {self.primitive_name}" if self.primitive_name else "Benchmark"
        header = (*TABLE_HEADER, "x best")
        rows: list[tuple[str, ...]] = []
        for r in self.records:
            best = self.fastest(r.label)
            if not r.success:
                rows.append((r.label, r.platform, r.backend, "FAILED", "", "", "", "", r.error or ""))
                continue
            ratio = r.median_ms / best.median_ms if best is not None and best.median_ms > 0 else math.nan
            mark = " *" if best is r else ""
            times = (r.median_ms, r.noise_ms, r.mean_ms, r.min_ms)
            cells = (r.label, r.platform, r.backend + mark, *(f"{t:.4f}" for t in times), str(r.rounds))
            rows.append((*cells, f"{ratio:.2f}"))
        widths = [max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(header)]
        lines = [title, "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
        if self.remembered:
            lines.append("(remembered from an earlier run: not timed again)")
        if self.chosen is not None:
            lines.append(f"default backend set to {self.chosen!r}")
        return "\n".join(lines)

    def print(self) -> None:
        """Prints :meth:`table` to stdout (asked for by name; the package itself only logs)."""
        print(self.table())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return f"BenchmarkResult({self.primitive_name!r}, {len(self.records)} records)"


def _device(platform: str) -> Any:
    import jax

    try:
        return jax.devices(platform)[0]
    except RuntimeError as exc:
        raise KernelCallError(
            f"benchmark(platform={platform!r}) needs a {platform!r} device, and JAX has none here ({exc}); "
            "benchmark a platform this machine has",
            platform=platform,
        ) from None


def _same(a: Any, b: Any, rtol: float, atol: float) -> bool:
    import jax

    left, right = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    return len(left) == len(right) and all(
        np.shape(x) == np.shape(y) and np.allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)
        for x, y in zip(left, right, strict=True)
    )


def benchmark_backends(
    name: str,
    call: Callable[..., Any],
    platform: str,
    backends: Sequence[str],
    configs: Sequence[BenchmarkConfig],
    n_warmup: int,
    n_runs: int,
    n_batch_per_run: int,
    compare_results: bool,
    rtol: float,
    atol: float,
    catch_errors: bool,
) -> BenchmarkResult:
    """Times ``call(*config.args, backend=b, **config.kernel_kwargs)`` under ``jax.jit`` for every
    backend ``b`` and configuration, in interleaved rounds on ``platform``'s first device."""
    import jax

    device = _device(platform)
    records: list[BenchmarkRecord] = []
    for config in configs:
        placed = config.put_args(device)
        runners: dict[str, Callable[[], Any]] = {}
        outputs: dict[str, Any] = {}
        errors: dict[str, str] = {}
        for backend in backends:
            fn = jax.jit(functools.partial(call, backend=backend, **placed.kernel_kwargs))
            try:
                outputs[backend] = jax.block_until_ready(fn(*placed.args))  # compiles
                for _ in range(n_warmup):
                    jax.block_until_ready(fn(*placed.args))
            except Exception as exc:
                if not catch_errors:
                    raise
                errors[backend] = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
                continue
            runners[backend] = functools.partial(fn, *placed.args)
        times = time_interleaved(runners, n_runs, n_batch_per_run) if runners else {}
        for backend in backends:
            ok = backend in times
            fields: dict[str, Any] = {"platform": platform, "backend": backend, "label": config.name}
            fields.update(summarize(times[backend]) if ok else FAILED, throughput=None, success=ok)
            fields.update(error=errors.get(backend), rounds=n_runs if ok else 0)
            kwargs, data = dict(config.kernel_kwargs), dict(config.data_kwargs)
            record = BenchmarkRecord(**fields, kernel_kwargs=kwargs, data_kwargs=data)
            log.info("%s [%s|%s] %s: median %.4f ms", name, platform, backend, config.name, record.median_ms)
            records.append(record)
        if compare_results and len(outputs) > 1:
            reference, *others = outputs
            for other in others:
                if not _same(outputs[reference], outputs[other], rtol, atol):
                    warnings.warn(
                        f"{name} [{config.name}]: backend {other!r} gives results that differ from "
                        f"{reference!r} beyond rtol={rtol}, atol={atol}",
                        UserWarning,
                        stacklevel=3,
                    )
    return BenchmarkResult(records, primitive_name=name)
