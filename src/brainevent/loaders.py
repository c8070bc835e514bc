"""The public loaders for C++ (CPU) modules. The CUDA twins live in ``cuda_loaders``.

Their keyword options are the rows of ``load_options.OPTIONS`` that the CPU takes; the
signatures spell them out for users and their tools, the table checks them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .config import trim_internal_frames
from .platforms.devices import HOST_PLATFORM as CPU
from .stages.recall import attempt

# The pipeline loads when a call is not recalled (stages/recall.py).
if TYPE_CHECKING:
    from .runtime.module import CompiledModule


@trim_internal_frames
def load_cpp_inline(
    name: str,
    cpp_sources: str | Sequence[str],
    functions: Any = None,
    *,
    extra_cflags: Sequence[str] | None = None,
    extra_ldflags: Sequence[str] | None = None,
    extra_include_paths: Sequence[str] | None = None,
    build_directory: str | None = None,
    verbose: bool = False,
    force_rebuild: bool = False,
    replace: bool = False,
    auto_register: bool = True,
    target_prefix: str | None = None,
    optimization_level: int = 3,
    use_fast_math: bool = False,
    extra_libraries: Sequence[str] | None = None,
    openmp: bool = False,
    debug: bool | None = None,
) -> CompiledModule:
    """Compile inline C++ source for the CPU and register its functions as JAX FFI targets.

    Args:
        name: Module name; targets are ``"<target_prefix or name>.<function>"``.
        cpp_sources: C++ source code, or a list of strings that are concatenated.
        functions: ``{"func": ["arg", "ret", ...]}`` explicit arg_specs; a list of function
            names whose specs are inferred from their C++ signatures; or ``None`` to use
            ``// @BE name [tokens]`` annotations in the source.
        extra_cflags: Additional compiler flags, e.g. ``["-DNDEBUG"]``.
        extra_ldflags: Additional linker flags, e.g. ``["-lm"]``.
        extra_include_paths: Additional include directories.
        build_directory: Use this directory as the cache root instead of the default.
        verbose: Log the build's commands and progress to stderr.
        force_rebuild: Compile even if an identical build is cached.
        replace: Let this module take over FFI targets that another module registered
            (same ``target_prefix`` and function name); without it that is a
            ``RegistrationError``. Reloading the same module never needs it.
        auto_register: Register each function with JAX (platform ``cpu``).
        target_prefix: Prefix of the target names (default: ``name``).
        optimization_level: ``-O<n>``, 0 to 3 (default 3).
        use_fast_math: Compile with ``-ffast-math``.
        extra_libraries: NVIDIA libraries to compile and link against, e.g. ``["nvrtc"]`` or
            ``["cudart"]``, found by cuda-pathfinder in NVIDIA's pip wheels, conda or the system
        openmp: Compile and link with OpenMP (``-fopenmp``; the same as giving ``-fopenmp`` in
            ``extra_cflags``). The runtime waits passively unless ``OMP_WAIT_POLICY`` is set
            (see docs/existing-code.md).
        debug: Build with ``-g -O0`` and ``BE_DEBUG=1`` (bounds-checked ``BE::Tensor::at<T>()``);
            None reads ``BRAINEVENT_DEBUG`` (see docs/troubleshooting.md).

    A ``stream`` parameter is accepted and receives 0, so one source can serve CPU and GPU.
    """
    arguments = dict(locals())
    call, recalled = attempt("load_cpp_inline", CPU, arguments)
    if recalled is not None:
        return recalled
    from .load_options import keywords_of
    from .stages.load import load
    from .stages.request import inline_unit, make_request

    keywords = {key: value for key, value in arguments.items() if key in keywords_of(CPU)}
    unit = inline_unit(name, cpp_sources, "cpp_sources", ".cpp")
    return load(make_request(CPU, [unit], name, functions, keywords), call)


@trim_internal_frames
def load_cpp_file(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    functions: Any = None,
    *,
    name: str | None = None,
    **kwargs: Any,
) -> CompiledModule:
    """Compile a C++ file, or a list of C++ and C files linked into one module; ``name``
    defaults to the (first) file's stem. Other keywords as ``load_cpp_inline``.

    Each file's directory is on its include path, and the project headers it includes
    (transitively) are tracked. ``.c`` files are compiled as C; entry points live in the C++ files.
    """
    from .stages.load import load
    from .stages.request import paths_request

    return load(paths_request(CPU, "load_cpp_file", path, functions, name, kwargs))


@trim_internal_frames
def load_cpp_dir(
    path: str | os.PathLike[str], functions: Any = None, *, name: str | None = None, **kwargs: Any
) -> CompiledModule:
    """Compile every ``.cpp``/``.cc``/``.cxx``/``.c`` file of a directory into one module,
    each file its own object, in parallel; ``name`` defaults to the directory's name.

    Headers beside the sources are on the include path and tracked; objects are cached by
    content, so editing one file recompiles that file and the link. Keywords as
    ``load_cpp_inline``.
    """
    from .stages.load import load
    from .stages.request import paths_request

    return load(paths_request(CPU, "load_cpp_dir", path, functions, name, kwargs, directory=True))
