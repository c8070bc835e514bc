"""Defining the backends of an ``XLACustomKernel`` and choosing each platform's default."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Self

from .. import config
from ..backends import LIBRARIES, check_platform
from ..errors import KernelCallError
from ..platform_table import BY_NAME, DEVICE_PLATFORMS
from ..platform_table import SPELLINGS as ALIASES
from . import kernels
from .kernels import KernelEntry, LaunchValue

PLATFORMS = tuple(p.name for p in DEVICE_PLATFORMS)
HOST = DEVICE_PLATFORMS[0].name  # the host: Pallas runs there only through def_kernel


def platform_name(platform: object, allowed: Sequence[str] = PLATFORMS) -> str:
    if not isinstance(platform, str):
        raise TypeError(f"platform must be a string such as 'cpu' or 'gpu', got {type(platform).__name__}")
    resolved = ALIASES.get(platform, "")
    if resolved not in allowed:
        names = sorted(k for k, v in ALIASES.items() if v in allowed)
        raise ValueError(f"platform must be one of {names}, got {platform!r}")
    return resolved


class BackendTable:
    """The ``def_*`` methods of :class:`XLACustomKernel`: platform -> backend name -> entry."""

    name: str
    _kernels: dict[str, dict[str, KernelEntry]]
    _defaults: dict[str, str]
    _lowered: set[str]
    _warned: set[str]
    _pinned: set[str]  # platforms whose default set_default() chose: no remembered choice beats it

    def def_kernel(self, *args: Any, **kwargs: Any) -> Self:
        """Defines a backend, in one of two forms told apart by their arguments:

        - ``def_kernel(backend, platform, kernel_generator, asdefault=False)`` (three
          arguments, as in brainevent 0.2.1): ``kernel_generator(outs=..., **attrs)`` returns
          a function of the input arrays that the primitive traces into its lowering. A
          compiled function may stand in for the generator.
        - ``def_kernel(platform, module.func, *, backend=None, asdefault=False)`` (two
          arguments): a compiled function from ``load_cpp_*`` (``"cpu"``, backend ``"cpp"``)
          or ``load_cuda_*`` (``"gpu"``, backend ``"cuda_raw"``).

        ``asdefault=True`` makes the backend its platform's default; otherwise the first one
        defined for a platform is.
        """
        if "function" in kwargs or (
            len(args) == 2 and not {"kg", "kernel_generator", "platform"} & kwargs.keys()
        ):
            if all(isinstance(a, str) for a in args) and args[1] in ALIASES and args[0] not in ALIASES:
                raise TypeError(
                    f"def_kernel({args[0]!r}, {args[1]!r}) lacks its kernel_generator: "
                    "def_kernel(backend, platform, kernel_generator)"
                )
            return self._def_compiled(*args, **kwargs)
        return self._def_named(*args, **kwargs)

    def _def_compiled(
        self, platform: str, function: Any, *, backend: str | None = None, asdefault: bool = False
    ) -> Self:
        resolved = platform_name(platform, [p.name for p in DEVICE_PLATFORMS if p.build_platform])
        kernel = kernels.ModuleFunctionKernel(function)
        expected = BY_NAME[resolved].build_platform
        if kernel.function.platform != expected:
            raise ValueError(
                f"{kernel.function.target} was compiled for {kernel.function.platform!r}, not {expected!r}: "
                "use load_cpp_* modules for 'cpu' and load_cuda_* modules for 'gpu'"
            )
        name: Any = BY_NAME[resolved].compiled_backend if backend is None else backend
        return self._add(KernelEntry(name, resolved, function, kernel), asdefault)

    def _def_named(
        self,
        backend: Any = None,
        platform: Any = None,
        kernel_generator: Any = None,
        asdefault: bool = False,
        *,
        kg: Any = None,
    ) -> Self:
        if kg is not None:
            if kernel_generator is not None:
                raise TypeError("pass the kernel generator once: as kernel_generator or as kg, not both")
            kernel_generator = kg
        resolved = platform_name(platform)
        if not callable(kernel_generator):
            raise TypeError(
                "kernel_generator must be callable: kernel_generator(outs=..., **attrs) returns a function "
                f"of the input arrays; got {type(kernel_generator).__name__}"
            )
        from ..runtime.kernel_function import KernelFunction

        if isinstance(kernel_generator, KernelFunction):
            return self._def_compiled(resolved, kernel_generator, backend=backend, asdefault=asdefault)
        return self._add(KernelEntry(backend, resolved, kernel_generator), asdefault)

    def _add(self, entry: KernelEntry, asdefault: bool) -> Self:
        if not isinstance(entry.backend, str) or not entry.backend:
            raise TypeError(
                f"backend must be a non-empty string such as 'numba' or 'cpp', got {entry.backend!r}"
            )
        platform = entry.platform
        check_platform(entry.backend, platform)
        entries = self._kernels.setdefault(platform, {})
        replaced = entry.backend in entries
        entries[entry.backend] = entry
        before = self._defaults.get(platform)
        if asdefault or before is None:
            self._defaults[platform] = entry.backend
        if platform in self._lowered and (replaced or self._defaults[platform] != before):
            config._clear_jax_caches()  # compiled functions hold the old choice
        return self

    def def_numba_kernel(
        self,
        kg: Any = None,
        asdefault: bool = False,
        *,
        kernel: Any = None,
        generator: Callable[..., Any] | None = None,
    ) -> Self:
        """Backend ``"numba"`` on the CPU, in one of two forms:

        - a Numba ``@njit`` function (positional, or ``kernel=``) that receives the inputs,
          then the outputs to write; ``generator=`` instead builds one per distinct attribute
          values (``generator(**attrs)`` returns the ``@njit`` function);
        - a 0.2.1 kernel generator (positional, not a Numba function): ``kg(outs=..., **attrs)``
          returns a function of the input arrays, e.g. ``numba_kernel(f, outs=outs)``.
        """
        plain = kg is not None  # a lone positional non-Numba callable is a 0.2.1 generator
        return self._add_numba("numba", kg, kernel, generator, asdefault, plain, kernels.NumbaCpuKernel)

    def def_numba_cuda_kernel(
        self,
        kg: Any = None,
        asdefault: bool = False,
        *,
        kernel: Any = None,
        generator: Callable[..., Any] | None = None,
        grid: LaunchValue = None,
        block: LaunchValue = None,
        launch_dims: LaunchValue = None,
        threads_per_block: int = 256,
        shared_mem: int = 0,
    ) -> Self:
        """Backend ``"numba_cuda"`` on the GPU: a ``@numba.cuda.jit`` kernel launched like
        :func:`brainevent.numba_cuda_kernel` (``grid``/``block``/``launch_dims`` may be
        callables ``(ins, outs) -> dims`` of the call's abstract operands), or, given a
        callable that is not a Numba kernel and no launch settings, a 0.2.1 kernel generator."""
        launch = (grid, block, launch_dims, threads_per_block, shared_mem)
        plain = all(v is None for v in launch[:3])  # no launch settings given
        make = functools.partial(kernels.NumbaCudaKernel, launch=launch)
        return self._add_numba("numba_cuda", kg, kernel, generator, asdefault, plain, make)

    def def_cuda_kernel(
        self,
        source_or_path: Any,
        name: Any,
        *,
        grid: LaunchValue = None,
        block: LaunchValue = None,
        launch_dims: LaunchValue = None,
        threads_per_block: int = 256,
        shared_mem: int = 0,
        compute_capability: Any = None,
        options: Sequence[str] = (),
        include_dirs: Sequence[Any] = (),
        asdefault: bool = False,
        **scalars: Any,
    ) -> Self:
        """Backend ``"nvrtc"`` on the GPU: a ``__global__`` CUDA kernel compiled with NVRTC (no
        nvcc) and launched like :func:`brainevent.cuda_kernel`. Its pointer parameters receive
        the inputs, then the outputs; its scalar parameters come from ``scalars`` and from the
        call's attributes, by name. ``name`` (a name expression such as ``"axpy<float>"``),
        ``grid``/``block``/``launch_dims`` and each scalar may be callables ``(ins, outs) -> value``
        of the call's abstract operands, e.g. ``n=lambda ins, outs: outs[0].size``. With
        ``num_batch_dims=k`` on the primitive they see one batch element (the operands without
        their first ``k`` dims), and each call runs the kernel once per batch element."""
        from ..nvrtc.kernel import KernelDef

        launch = (grid, block, launch_dims, threads_per_block, shared_mem)
        given = (source_or_path, name, launch, compute_capability, options, include_dirs, scalars)
        kernel = KernelDef.checked("def_cuda_kernel", *given)
        return self._add(KernelEntry("nvrtc", "gpu", name, kernels.NvrtcKernel(kernel)), asdefault)

    def _add_numba(
        self, backend: str, kg: Any, kernel: Any, generator: Any, asdefault: bool, plain: bool, make: Any
    ) -> Self:
        """``kg`` alone, not a Numba dispatcher (``@njit`` / ``@cuda.jit``), is a 0.2.1 kernel
        generator when ``plain``; else ``make(kernel, generator)`` is the call-site kernel."""
        platform = LIBRARIES[backend].platforms[0]
        numba_object = type(kg).__module__.split(".")[0] in ("numba", "numba_cuda")
        if plain and kernel is None and generator is None and not numba_object:
            return self.def_kernel(backend, platform, kg, asdefault)
        if kg is not None:
            if kernel is not None:
                raise TypeError(f"def_{backend}_kernel: pass the kernel once, positionally or as kernel=")
            kernel = kg
        given = kernel if kernel is not None else generator
        return self._add(KernelEntry(backend, platform, given, make(kernel, generator)), asdefault)

    def def_warp_kernel(
        self, kg: Callable[..., Any], asdefault: bool = False, *, platform: str = "gpu"
    ) -> Self:
        """Backend ``"warp"``: ``kg(outs=..., **attrs)`` returns Warp's JAX callable
        (``warp.jax_kernel(kernel, ...)``). On the GPU by default; ``platform="cpu"`` runs the
        kernel on Warp's CPU device. Needs ``pip install warp-lang`` when first lowered."""
        return self.def_kernel("warp", platform_name(platform, LIBRARIES["warp"].platforms), kg, asdefault)

    def def_triton_kernel(self, kg: Callable[..., Any], asdefault: bool = False) -> Self:
        """Backend ``"triton"`` on the GPU: ``kg(outs=..., **attrs)`` returns a JAX callable that
        runs a Triton kernel. Needs ``pip install triton`` when the backend is first lowered."""
        return self.def_kernel("triton", "gpu", kg, asdefault)

    def def_pallas_kernel(self, platform: str, kg: Callable[..., Any], asdefault: bool = False) -> Self:
        """Backend ``"pallas"`` on ``"gpu"`` or ``"tpu"``: ``kg(outs=..., **attrs)`` returns a
        ``pl.pallas_call``. (Pallas's interpreter on the CPU: ``def_kernel("pallas", "cpu", kg)``
        with ``pl.pallas_call(..., interpret=True)``.)"""
        if not isinstance(platform, str) or ALIASES.get(platform, HOST) == HOST:
            raise ValueError(
                f"def_pallas_kernel's platform must be 'gpu' or 'tpu', got {platform!r}; to run a Pallas "
                "kernel through its interpreter on the CPU, define it with def_kernel('pallas', 'cpu', kg) "
                "and have kg return pl.pallas_call(..., interpret=True)"
            )
        return self.def_kernel("pallas", platform, kg, asdefault)

    def def_cuda_raw_kernel(self, kg: Any, asdefault: bool = False) -> Self:
        """Backend ``"cuda_raw"`` on the GPU: a compiled CUDA function (``module.func`` from
        ``load_cuda_*``), or a generator returning a function of the inputs that calls one."""
        return self.def_kernel("cuda_raw", "gpu", kg, asdefault)

    def set_default(self, platform: str, backend: str) -> None:
        """Makes ``backend`` the default on ``platform``, for every operand shape: it also beats
        choices remembered by ``benchmark(remember=True)``. A real change clears JAX's caches,
        so already-compiled functions use it on their next call."""
        self._set_default(platform, backend, pin=True)

    def _set_default(self, platform: str, backend: str, *, pin: bool) -> None:
        resolved = platform_name(platform)
        defined = self.available_backends(resolved)
        if not defined:
            raise self._error(
                f"has no kernels for platform {platform!r}; define one first", platform=platform
            )
        if backend not in defined:
            raise self._error(
                f"has no backend {backend!r} for {platform!r}; defined: {defined}", backend=backend
            )
        if pin:
            self._pinned.add(resolved)
        if self._defaults.get(resolved) != backend:
            self._defaults[resolved] = backend
            config._clear_jax_caches()

    def get_default(self, platform: str) -> str | None:
        return self._defaults.get(platform_name(platform))

    @property
    def defaults(self) -> dict[str, str]:
        """Platform to default backend (a copy)."""
        return dict(self._defaults)

    def available_backends(self, platform: str) -> list[str]:
        """The backends defined for ``platform``, in the order they were defined."""
        return list(self._kernels.get(platform_name(platform), {}))

    @property
    def platforms(self) -> list[str]:
        return sorted(p for p, entries in self._kernels.items() if entries)

    def _error(self, text: str, **data: Any) -> KernelCallError:
        """A KernelCallError that begins ``XLACustomKernel '<name>'`` and carries the name."""
        return KernelCallError(f"XLACustomKernel {self.name!r} {text}", kernel=self.name, **data)

    def _warn_backend_once(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            warnings.warn(message, UserWarning, stacklevel=3)
