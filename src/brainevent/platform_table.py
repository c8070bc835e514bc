"""The platforms, described once: every other list of platform names reads this table.

Users name a platform many ways ("gpu", "cuda", "rocm"; JAX lowers for "cuda" or "rocm";
modules for it are built for the "cuda" platform and registered with JAX as "CUDA"). Inside
the library a device platform has one name, the first column. The build platform is the name
cache keys, manifests and bundles carry ("cuda" stays "cuda" on disk); its row also says how
the module is registered, which ``BE::ffi::Platform`` the binding decodes for (checked against
``include/brainevent/ffi_function.h`` by a test) and which source files are its language.
Pure data, on the ground floor: ``config`` imports it at ``import brainevent``.
"""

from typing import NamedTuple


class DevicePlatform(NamedTuple):
    """One platform's row (a NamedTuple: it is defined on every cache hit; architecture.md's rule)."""

    name: str  # the one name used inside the library (and by XLACustomKernel's tables)
    spellings: tuple[str, ...]  # what users may write for it (the name first)
    jax_platforms: tuple[str, ...]  # the platform names JAX lowers for
    kernel_hint: str  # how an XLACustomKernel gets a kernel for it (error messages)
    # The rest (given by keyword) only for platforms brainevent builds modules for (platforms/).
    build_platform: str | None = None  # cache keys, manifests, bundles, CompiledModule.platform
    platform_class: str = ""  # "module:class" in brainevent.platforms
    compiled_backend: str | None = None  # the backend name of a compiled module function
    ffi_platform: str = ""  # the platform given to jax.ffi.register_ffi_target
    ffi_spellings: tuple[str, ...] = ()  # what register_ffi_target(platform=) accepts (lower case)
    binding_enum: tuple[str, int] = ("", -1)  # BE::ffi::Platform enumerator and value
    binding_defines: tuple[str, ...] = ()  # macros the decoder unit is compiled with
    suffixes: tuple[str, ...] = ()  # source files of its language (the first: what units are keyed as)
    debug_flags: tuple[str, ...] = ()  # what debug=True adds to its compile flags (load_options.py)
    graph_capture: bool = False  # XLA may capture its handlers in graphs (CUDA graphs)


DEVICE_PLATFORMS: tuple[DevicePlatform, ...] = (
    DevicePlatform(
        "cpu",
        ("cpu",),
        ("cpu",),
        "op.def_numba_kernel(...), op.def_kernel('cpu', cpp_module.func) or "
        "op.def_kernel('<backend>', 'cpu', kernel_generator)",
        build_platform="cpu",
        platform_class="cpu:CpuPlatform",
        compiled_backend="cpp",
        ffi_platform="cpu",
        ffi_spellings=("cpu", "host"),
        binding_enum=("Cpu", 0),
        suffixes=(".cpp", ".cc", ".cxx"),
        debug_flags=("-g", "-DBE_DEBUG=1", "-D_GLIBCXX_ASSERTIONS", "-fno-omit-frame-pointer"),
    ),
    DevicePlatform(
        "gpu",
        ("gpu", "cuda", "rocm"),
        ("cuda", "rocm"),
        "op.def_cuda_kernel(source, name, ...), op.def_numba_cuda_kernel(...), "
        "op.def_kernel('gpu', cuda_module.func), "
        "op.def_pallas_kernel('gpu', kernel_generator), op.def_warp_kernel(kernel_generator) or "
        "op.def_triton_kernel(kernel_generator)",
        build_platform="cuda",
        platform_class="cuda:CudaPlatform",
        compiled_backend="cuda_raw",
        ffi_platform="CUDA",
        ffi_spellings=("cuda", "gpu"),
        binding_enum=("Cuda", 1),
        binding_defines=("BE_BINDING_CUDA",),
        graph_capture=True,
        suffixes=(".cu",),
        debug_flags=("-g", "-lineinfo", "-DBE_DEBUG=1", "-Xcompiler=-D_GLIBCXX_ASSERTIONS"),
    ),
    DevicePlatform("tpu", ("tpu",), ("tpu",), "op.def_pallas_kernel('tpu', kernel_generator)"),
)

BY_NAME = {p.name: p for p in DEVICE_PLATFORMS}
# Any spelling -> the one name.
SPELLINGS = {spelling: p.name for p in DEVICE_PLATFORMS for spelling in p.spellings}
# JAX's lowering platform -> the one name.
OF_JAX_PLATFORM = {jax: p.name for p in DEVICE_PLATFORMS for jax in p.jax_platforms}
# The platforms modules are built for, by build platform name ("cpu", "cuda").
BUILD_PLATFORMS = {p.build_platform: p for p in DEVICE_PLATFORMS if p.build_platform}
# The build platform of code that runs in the calling process (the first row).
HOST_PLATFORM: str = DEVICE_PLATFORMS[0].build_platform or ""
# The build platform of CUDA modules (the "gpu" row's).
CUDA_PLATFORM: str = BY_NAME["gpu"].build_platform or ""

# C sources: the host C compiler builds them on every platform.
C_SUFFIXES = (".c",)
# A source suffix -> the build platform whose loaders read it as their language.
PLATFORM_OF_SUFFIX = {s: build for build, p in BUILD_PLATFORMS.items() for s in p.suffixes}
# A source suffix -> the suffix its unit is keyed and compiled as (its platform's first; C stays C).
UNIT_SUFFIXES = {s: p.suffixes[0] for p in BUILD_PLATFORMS.values() for s in p.suffixes} | {
    s: s for s in C_SUFFIXES
}
