"""``XLACustomKernel``: one named JAX primitive with named backends per platform and its own rules,
and the registry of every one made in this process (the only global state of this package
besides JAX's own), for tools that list or benchmark them."""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, cast

import numpy as np

from .. import config
from ..backends import require_library
from ..calls.batching import check_vmap_method
from ..errors import UnhashableAttributeError
from ..launchers.launch_config import is_int
from ..logs import to_stderr
from ..platform_table import OF_JAX_PLATFORM as _OF_JAX_PLATFORM
from . import selection
from .benchmark import BenchmarkConfig, BenchmarkResult, benchmark_backends, log
from .definitions import BackendTable, platform_name
from .kernels import KernelEntry, LoweringCall
from .rules import Rules


def _check_attrs(name: str, attrs: Mapping[str, Any]) -> dict[str, Any]:
    # Primitive parameters are part of JAX's trace cache key, so they must be hashable.
    for key, value in attrs.items():
        try:
            hash(value)
        except TypeError:
            raise UnhashableAttributeError(
                f"{name}: attribute {key!r} must be a scalar or another hashable value (int, float, bool, "
                f"str, tuple, dtype), got unhashable {type(value).__name__} {value!r:.80}; pass arrays as "
                "positional operands and lists as tuples",
                attribute=key,
            ) from None
    return dict(attrs)


def _callable(what: str, fn: Any) -> Callable[..., Any]:
    if not callable(fn):
        raise TypeError(f"{what} needs a callable, got {type(fn).__name__}")
    return cast(Callable[..., Any], fn)


class XLACustomKernel(BackendTable, Rules):
    """A named JAX primitive with named backends per platform, chosen when it is lowered.

    ``op(*arrays, outs=..., backend=None, **attrs)`` binds the primitive: its abstract
    evaluation is ``outs`` (a ``jax.ShapeDtypeStruct`` or a pytree of them); lowering picks a
    backend for the platform being compiled for and emits its kernel, so no Python runs per
    call. Backends: compiled functions (``def_kernel(platform, module.func)``), Numba and
    Numba-CUDA kernels, and kernel generators (``def_kernel(backend, platform, generator)``,
    ``def_pallas_kernel``, ``def_warp_kernel``, ``def_triton_kernel``, ...), as in brainevent
    0.2.1. The first backend defined for a platform is its default; a failing backend falls
    back to the next one.

    Args:
        name: The primitive's name (shown in jaxprs, errors and :func:`get_registry`).
        doc: Optional docstring of this primitive.
        outs: Default result specs, or a callable ``outs(*arrays, **attrs)`` returning them;
            a call's own ``outs=`` takes precedence.
        num_batch_dims: When set, the first ``num_batch_dims`` dims of every operand and
            result are independent problems: ``jit`` with inputs sharded along them
            partitions the call across devices instead of gathering the inputs.
        vmap_method: Default batching when no rule is defined: ``"sequential"`` (a loop,
            the kernel sees unbatched operands), ``"expand_dims"`` (the kernel sees a
            leading batch axis; unbatched inputs get a size-1 axis) or ``"broadcast_all"``
            (every input broadcast to the batch size).
        input_output_aliases: ``{input index: output index}`` for in-place updates.
    """

    def __init__(
        self,
        name: str,
        doc: str | None = None,
        *,
        outs: Any = None,
        num_batch_dims: int | None = None,
        vmap_method: str = "sequential",
        input_output_aliases: dict[int, int] | None = None,
    ) -> None:
        from jax.extend.core import Primitive

        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        check_vmap_method(vmap_method, allow_none=False)
        if num_batch_dims is not None and (not is_int(num_batch_dims) or num_batch_dims < 1):
            raise ValueError(f"num_batch_dims must be a positive int or None, got {num_batch_dims!r}")
        self.name = name
        if doc is not None:
            self.__doc__ = doc
        self._outs = outs
        self._num_batch_dims = num_batch_dims
        self._vmap_method = vmap_method
        self._aliases = dict(input_output_aliases) if input_output_aliases else None
        self._kernels: dict[str, dict[str, KernelEntry]] = {}  # platform -> backend -> entry
        self._defaults: dict[str, str] = {}
        self._lowered: set[str] = set()  # platforms lowered at least once (caches to clear)
        self._warned: set[str] = set()
        self._pinned: set[str] = set()
        self._tags: set[str] = set()
        self._call_fn: Callable[..., Any] | None = None
        self._benchmark_data_fn: Callable[..., Any] | None = None
        self._rule_backend = threading.local()  # a call's backend=, seen by calls its rules make
        self.primitive = Primitive(name)
        self.primitive.multiple_results = True
        self._install()
        register_primitive(name, self)

    # -- calling -----------------------------------------------------------------------------

    def __call__(self, *args: Any, outs: Any = None, backend: str | None = None, **attrs: Any) -> Any:
        import jax
        import jax.numpy as jnp
        from jax.core import ShapedArray

        from ..calls.batching import batch_operands
        from ..calls.ffi import align_inputs, flatten_outs

        if backend is None:
            backend = getattr(self._rule_backend, "value", None)
        elif not isinstance(backend, str) or not backend:
            what = "an empty string" if backend == "" else repr(backend)
            defined = {p: list(e) for p, e in self._kernels.items()}
            raise self._error(
                f"call: backend cannot be {what}; pass a backend name from {defined}, or leave it out"
            )
        arrays = [a if hasattr(a, "dtype") and hasattr(a, "shape") else jnp.asarray(a) for a in args]
        outs = self._outs if outs is None else outs
        if callable(outs) and not hasattr(outs, "shape"):
            outs = outs(*arrays, **attrs)
        if outs is None:
            raise self._error(
                "call: no result specs; pass outs=jax.ShapeDtypeStruct(...) to the call or to "
                "XLACustomKernel(..., outs=...)"
            )
        specs, treedef = flatten_outs(outs, self.name)
        out_avals = tuple(ShapedArray(tuple(int(d) for d in s.shape), np.dtype(s.dtype)) for s in specs)
        params = _check_attrs(self.name, attrs)
        if self._num_batch_dims is not None:
            if "batch_dims" in params:
                raise self._error(
                    "call: the attribute name 'batch_dims' is reserved with num_batch_dims; rename it"
                )
            arrays = batch_operands(self.name, arrays, specs, self._num_batch_dims)
            params["batch_dims"] = self._num_batch_dims
        if backend is not None:
            params["backend"] = backend
        arrays, _ = align_inputs(arrays)  # the abstract eval then types results as they vary
        results = self.primitive.bind(*arrays, outs=out_avals, **params)
        return jax.tree_util.tree_unflatten(treedef, list(results))

    # -- JAX plumbing --------------------------------------------------------------------------

    def _install(self) -> None:
        from jax._src import dispatch
        from jax.interpreters import ad, batching, mlir

        from ..calls.ffi import abstract_results

        prim = self.primitive
        prim.def_impl(partial(dispatch.apply_primitive, prim))
        prim.def_abstract_eval(lambda *avals, outs, **params: abstract_results(self.name, avals, outs))
        for jax_platform in (*_OF_JAX_PLATFORM, None):  # None: any other platform, to name it in the error
            mlir.register_lowering(
                prim, partial(self._lower, jax_platform=jax_platform), platform=jax_platform
            )
        batching.primitive_batchers[prim] = self._batch
        ad.primitive_jvps[prim] = self._jvp
        ad.primitive_transposes[prim] = self._transpose

    def _lower(
        self, ctx: Any, *operands: Any, jax_platform: str | None, outs: tuple[Any, ...], **params: Any
    ) -> Any:
        platform = _OF_JAX_PLATFORM.get(jax_platform or "", "")
        entries = self._kernels.get(platform, {})
        if not entries:
            named = platform or jax_platform or ", ".join(getattr(ctx.module_context, "platforms", ()))
            raise selection.missing_platform(self.name, named or "this backend", self._kernels)
        requested = params.pop("backend", None)
        batch_dims = params.pop("batch_dims", 0)
        self._lowered.add(platform)
        if requested is not None:
            if requested not in entries:
                raise selection.unknown_backend(self.name, platform, requested, list(entries))
            order = [requested]
        else:
            chosen = config.get_backend(platform)
            default = self._defaults.get(platform)
            if chosen is None and platform not in self._pinned:
                from .remembered import lookup

                default = lookup(self.name, platform, ctx.avals_in, outs, entries) or default
            order, ignored = selection.preference(list(entries), default, chosen)
            if ignored:
                self._warn_backend_once(
                    f"the global backend {chosen!r} (brainevent.config.set_backend) is not defined for "
                    f"platform {platform!r} by XLACustomKernel {self.name!r}; ignoring it and using "
                    f"{order[0]!r}"
                )
        failures: list[tuple[str, BaseException]] = []
        for backend in order:
            mark = selection.IRMark()
            try:
                require_library(backend)
                call = LoweringCall(ctx, operands, outs, params, self._aliases, batch_dims)
                lowered = entries[backend].lowering.lower(call)
            except Exception as exc:
                mark.rollback()  # a failed try must leave no operations behind
                failures.append((backend, exc))
                continue
            if failures:
                failed = "; ".join(f"{b!r}: {selection.reason(e)}" for b, e in failures)
                self._warn_backend_once(
                    f"XLACustomKernel {self.name!r} on {platform!r}: {failed}; "
                    f"used backend {backend!r} instead"
                )
            return lowered
        raise selection.failure(self.name, platform, failures, list(entries))

    # -- call function, tags and benchmark --------------------------------------------------------

    def def_call(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """The user-facing function that prepares arguments and calls this primitive; it must
        accept and pass on ``backend=``. :meth:`call` and :meth:`benchmark` use it."""
        self._call_fn = _callable("def_call", fn)
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
        self._benchmark_data_fn = _callable("def_benchmark_data", fn)
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

        ``remember=True`` keeps in the cache directory, per configuration, the fastest backend for
        its operand shapes and dtypes on this kind of device, used by later lowerings with those
        operands in any process unless ``set_default()``, ``brainevent.config.set_backend`` or a
        call's ``backend=`` decide; and the run, which a later identical ``benchmark(remember=True)``
        returns untimed (``result.remembered``). Both go stale when a backend's source or a library
        version changes. With it, ``set_default=True`` sets the default for the shapes not measured.
        """
        import jax

        resolved = platform_name(jax.default_backend() if platform is None else platform)
        defined = self.available_backends(resolved)
        chosen = list(defined if backends is None else backends)
        if not chosen or any(b not in defined for b in chosen):
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
        result = measurement.result() if measurement is not None else None
        with to_stderr(log, logging.INFO, verbose):  # each timing, then the table
            if result is None:
                timing = (n_warmup, n_runs, n_batch_per_run, compare_results, rtol, atol, catch_errors)
                result = benchmark_backends(self.name, call, resolved, chosen, configs, *timing)
                if measurement is not None:
                    measurement.store(result)
                    if resolved in self._lowered:
                        config._clear_jax_caches()  # compiled functions hold the choices made before
            if set_default:
                best = result.best_backend()
                if best is None:
                    raise self._error(
                        f"has no backend that ran every configuration on {resolved!r}, so none was made "
                        f"the default:\n{result.table()}"
                    )
                self._set_default(resolved, best, pin=not remember)
                result.chosen = best
            if verbose:
                log.info("%s", result.table())
        return result

    def __repr__(self) -> str:
        backends = {p: list(e) for p, e in sorted(self._kernels.items()) if e}
        return f"XLACustomKernel({self.name!r}, backends={backends})"


_registry: dict[str, XLACustomKernel] = {}
_registry_lock = threading.Lock()


def register_primitive(name: str, primitive: XLACustomKernel) -> None:
    """Adds ``primitive`` under ``name``; a name already taken is replaced, with a warning
    (both keep working as JAX primitives)."""
    with _registry_lock:
        taken = name in _registry and _registry[name] is not primitive
        _registry[name] = primitive
    if taken:
        warnings.warn(
            f"an XLACustomKernel named {name!r} is already registered; the registry now holds the new "
            "one (both still work as JAX primitives, but get_registry() and benchmarks see only the "
            "newest). Give each primitive a unique name to silence this.",
            UserWarning,
            stacklevel=3,
        )


def get_registry() -> dict[str, XLACustomKernel]:
    """A copy of the registry: primitive name to ``XLACustomKernel``."""
    with _registry_lock:
        return dict(_registry)


def get_all_primitive_names() -> list[str]:
    """The names of every registered primitive, sorted."""
    return sorted(get_registry())


def get_primitives_by_tags(tags: Iterable[str]) -> dict[str, XLACustomKernel]:
    """The primitives carrying every one of ``tags`` (see ``XLACustomKernel.def_tags``)."""
    wanted = {tags} if isinstance(tags, str) else set(tags)  # a single tag given bare, not its letters
    return {name: prim for name, prim in get_registry().items() if wanted <= prim.tags}
