"""An ``XLACustomKernel``'s call function, tags and benchmark."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from .. import config
from .benchmark import BenchmarkConfig, BenchmarkResult, benchmark_backends, log, verbosity
from .definitions import BackendTable, platform_name


class Tools(BackendTable):
    """``def_call``/``call``, ``def_tags``/``tags`` and ``def_benchmark_data``/``benchmark``."""

    _tags: set[str]
    _call_fn: Callable[..., Any] | None = None
    _benchmark_data_fn: Callable[..., Any] | None = None

    def def_call(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """The user-facing function that prepares arguments and calls this primitive; it must
        accept and pass on ``backend=``. :meth:`call` and :meth:`benchmark` use it."""
        if not callable(fn):
            raise TypeError(f"def_call needs a callable, got {type(fn).__name__}")
        self._call_fn = fn
        return fn

    def call(self, *args: Any, **kwargs: Any) -> Any:
        if self._call_fn is None:
            raise self._error("has no call function; define one with op.def_call(fn)")
        return self._call_fn(*args, **kwargs)

    def def_tags(self, *tags: str) -> None:
        """Replaces this primitive's tags (for :func:`get_primitives_by_tags`)."""
        for tag in tags:
            if not isinstance(tag, str) or not tag:
                raise TypeError(f"tags must be non-empty strings, got {tag!r}")
        self._tags = set(tags)

    @property
    def tags(self) -> frozenset[str]:
        return frozenset(self._tags)

    def def_benchmark_data(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn(*, platform) -> list[BenchmarkConfig]``: the inputs :meth:`benchmark` times."""
        if not callable(fn):
            raise TypeError(f"def_benchmark_data needs a callable, got {type(fn).__name__}")
        self._benchmark_data_fn = fn
        return fn

    def benchmark(
        self,
        *,
        platform: str | None = None,
        n_warmup: int = 5,
        n_runs: int = 20,
        n_batch_per_run: int = 1,
        compare_results: bool = True,
        rtol: float = 1e-3,
        atol: float = 1e-3,
        verbose: bool = False,
        catch_errors: bool = True,
        backends: Sequence[str] | None = None,
        configs: Sequence[BenchmarkConfig] | None = None,
        set_default: bool = False,
        remember: bool = False,
    ) -> BenchmarkResult:
        """Times every backend of ``platform`` (default: JAX's default device's) on each
        configuration from :meth:`def_benchmark_data` (or ``configs=``), in interleaved rounds,
        through the :meth:`def_call` function (or the primitive itself) under ``jax.jit``.

        Each record has the median per-call time and a noise estimate (1.4826 x MAD) besides
        mean/std/min. ``set_default=True`` makes the backend with the lowest geometric mean of
        medians over all configurations the default; ``verbose=True`` logs each timing and
        the table to stderr.
        A backend that fails is recorded as failed (``catch_errors=False`` raises instead);
        results that differ between backends beyond ``rtol``/``atol`` warn.

        ``remember=True`` keeps the outcome in the cache directory: per configuration, the
        fastest backend for the primitive's operand shapes and dtypes on this kind of device,
        which later lowerings with those operands use (in this process and later ones) unless
        ``set_default()``, ``brainevent.config.set_backend`` or a call's ``backend=`` decide;
        and the run itself, which a later ``benchmark(remember=True)`` of the same
        configurations returns without timing again (``result.remembered`` is then True).
        Both go stale when a backend's source or a library version changes. With
        ``remember=True``, ``set_default=True`` sets the default for the shapes not measured.
        """
        import jax

        resolved = platform_name(jax.default_backend() if platform is None else platform)
        defined = self.available_backends(resolved)
        chosen = list(defined if backends is None else backends)
        unknown = [b for b in chosen if b not in defined]
        if unknown or not chosen:
            raise self._error(
                f"cannot benchmark backends {chosen} on {resolved!r}: it defines {defined} there",
                platform=resolved,
            )
        if n_runs < 1 or n_batch_per_run < 1 or n_warmup < 0:
            raise ValueError(
                "need n_runs >= 1, n_batch_per_run >= 1 and n_warmup >= 0, got "
                f"{n_runs}, {n_batch_per_run}, {n_warmup}"
            )
        if configs is None:
            if self._benchmark_data_fn is None:
                raise self._error(
                    "has no benchmark data: define op.def_benchmark_data(fn) returning a list of "
                    "BenchmarkConfig, or pass benchmark(configs=[...])"
                )
            configs = list(self._benchmark_data_fn(platform=resolved))
        if not configs or not all(isinstance(c, BenchmarkConfig) for c in configs):
            raise TypeError(
                f"benchmark data must be a non-empty list of BenchmarkConfig, got {configs!r:.200}"
            )
        call = self._call_fn or cast(Callable[..., Any], self)  # the primitive itself
        from .remembered import Run

        measurement = Run.describe(self, call, resolved, chosen, list(configs)) if remember else None
        result = measurement.result(self.name) if measurement is not None else None
        if result is None:
            options: dict[str, Any] = {"n_warmup": n_warmup, "n_runs": n_runs, "rtol": rtol, "atol": atol}
            options.update(n_batch_per_run=n_batch_per_run, compare_results=compare_results)
            with verbosity(verbose):
                result = benchmark_backends(
                    self.name, call, resolved, chosen, configs, **options, catch_errors=catch_errors
                )
            if measurement is not None:
                measurement.store(result)
                if resolved in self._lowered:
                    config._clear_jax_caches()  # compiled functions hold the choices made before
        if set_default:
            best = result.best_backend()
            if best is None:
                raise self._error(
                    f"has no backend that ran every configuration on {resolved!r}, so none was made the "
                    f"default:\n{result.table()}"
                )
            self._set_default(resolved, best, pin=not remember)
            result.chosen = best
        if verbose:
            with verbosity(True):
                log.info("%s", result.table())
        return result
