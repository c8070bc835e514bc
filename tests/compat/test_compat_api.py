"""The Python names of brainevent 0.2.1's kernel toolchain, on this package.

Each is exercised as a 0.2.1 user calls it, with real g++ builds called through JAX.
"""

from __future__ import annotations

import json
import os
import pickle
from collections.abc import Iterator
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent import config
from tests.support.kernels import CPU_SCALE

SCALE_SRC = (
    CPU_SCALE
    + r"""// @BE negate arg ret
void negate(const BE::Tensor x, BE::Tensor out) {
    const float* in = x.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = -in[i];
}
"""
)


@pytest.fixture
def code_cache_dir() -> Iterator[None]:
    """set_cache_dir is process-wide: undo it after the test."""
    yield
    config.set_override(config.CACHE_DIR, None)


@pytest.fixture(scope="module")
def scale_module(gxx: str) -> brainevent.CompiledModule:
    return brainevent.load_cpp_inline(name="compat_scale", cpp_sources=SCALE_SRC)


# ------------------------------------------------------------------------- the cache


def test_set_cache_dir_moves_builds_and_get_cache_dir_reports_it(
    gxx: str, tmp_path: Path, code_cache_dir: None
) -> None:
    target = tmp_path / "new" / "cache"
    brainevent.set_cache_dir(target)
    assert target.is_dir() and not target.stat().st_mode & 0o077  # created, private
    assert brainevent.get_cache_dir() == str(target) and isinstance(brainevent.get_cache_dir(), str)
    mod = brainevent.load_cpp_inline(name="compat_cache_here", cpp_sources=SCALE_SRC)
    assert Path(mod.path).is_relative_to(target) and mod.built_now
    np.testing.assert_array_equal(mod.negate(jnp.arange(3, dtype=jnp.float32)), [0, -1, -2])


def test_set_cache_dir_wins_over_the_environment_until_undone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code_cache_dir: None
) -> None:
    monkeypatch.setenv("BRAINEVENT_CACHE_DIR", str(tmp_path / "from-env"))
    assert brainevent.get_cache_dir() == str(tmp_path / "from-env")
    brainevent.set_cache_dir(str(tmp_path / "from-code"))
    assert brainevent.get_cache_dir() == str(tmp_path / "from-code")
    assert config.CACHE_DIR.source() == "set in code"
    config.set_override(config.CACHE_DIR, None)
    assert brainevent.get_cache_dir() == str(tmp_path / "from-env")


@pytest.mark.parametrize("bad", [None, 42, "", "   "])
def test_set_cache_dir_refuses_what_is_not_a_path(bad: object, code_cache_dir: None) -> None:
    with pytest.raises(brainevent.SpecError, match="set_cache_dir"):
        brainevent.set_cache_dir(bad)  # type: ignore[arg-type]


def test_set_cache_dir_on_a_file_is_a_cache_error(tmp_path: Path, code_cache_dir: None) -> None:
    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(brainevent.CacheError, match=r"not a directory|cannot create"):
        brainevent.set_cache_dir(afile)


def test_clear_cache_of_one_module_then_all_counts_entries(gxx: str, fresh_cache: Path) -> None:
    brainevent.load_cpp_inline(name="compat_clear_a", cpp_sources=SCALE_SRC)
    brainevent.load_cpp_inline(name="compat_clear_a", cpp_sources=SCALE_SRC, extra_cflags=["-DV=2"])
    brainevent.load_cpp_inline(name="compat_clear_b", cpp_sources=SCALE_SRC)
    assert brainevent.clear_cache("compat_clear_a") == 2
    assert brainevent.clear_cache("compat_clear_a") == 0
    again = brainevent.load_cpp_inline(name="compat_clear_b", cpp_sources=SCALE_SRC)
    assert not again.built_now  # the other module was left alone
    assert brainevent.clear_cache() == 1
    assert brainevent.load_cpp_inline(name="compat_clear_b", cpp_sources=SCALE_SRC).built_now


@pytest.mark.parametrize("bad", ["../escape", "a/b", ".hidden", "", 3])
def test_clear_cache_refuses_names_that_leave_the_cache(bad: object, fresh_cache: Path) -> None:
    with pytest.raises(brainevent.SpecError, match="clear_cache"):
        brainevent.clear_cache(bad)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- registration


def test_register_ffi_target_under_a_name_of_ones_own(gxx: str) -> None:
    mod = brainevent.load_cpp_inline(name="compat_unregistered", cpp_sources=SCALE_SRC, auto_register=False)
    assert "compat_unregistered.scale" not in brainevent.list_registered_targets()
    brainevent.register_ffi_target("my_own.scale", mod, "scale", platform="cpu")
    brainevent.register_ffi_target("my_own.scale", mod, "scale")  # again: a no-op
    x = jnp.arange(5, dtype=jnp.float32)
    call = jax.ffi.ffi_call("my_own.scale", jax.ShapeDtypeStruct(x.shape, x.dtype))
    np.testing.assert_array_equal(jax.jit(lambda v: call(v, factor=np.float32(3)))(x), np.arange(5) * 3)
    targets = brainevent.list_registered_targets()
    assert "my_own.scale" in targets and targets == sorted(targets)


def test_list_registered_targets_has_what_loaders_registered(scale_module: brainevent.CompiledModule) -> None:
    assert {"compat_scale.scale", "compat_scale.negate"} <= set(brainevent.list_registered_targets())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"func_name": "nope"}, "has no function 'nope'"),
        ({"platform": "CUDA"}, "built for 'cpu'"),
        ({"platform": "tpu"}, "platform='tpu' is not known"),
        ({"target_name": ""}, "non-empty string"),
    ],
)
def test_register_ffi_target_errors_are_kernel_registration_errors(
    scale_module: brainevent.CompiledModule, kwargs: dict, message: str
) -> None:
    args = {"target_name": "compat_bad.t", "module": scale_module, "func_name": "scale", **kwargs}
    with pytest.raises(brainevent.KernelRegistrationError, match=message):
        brainevent.register_ffi_target(**args)


def test_register_ffi_target_needs_a_compiled_module() -> None:
    with pytest.raises(brainevent.RegistrationError, match="CompiledModule"):
        brainevent.register_ffi_target("x.y", "not a module", "f")  # type: ignore[arg-type]


# ----------------------------------------------------------------- the module object


def test_function_names_lists_the_functions(scale_module: brainevent.CompiledModule) -> None:
    names = scale_module.function_names
    assert isinstance(names, list) and sorted(names) == ["negate", "scale"]
    assert names == list(scale_module.functions)


def test_get_handler_registers_by_hand(scale_module: brainevent.CompiledModule) -> None:
    jax.ffi.register_ffi_target(
        "compat_by_hand.negate", jax.ffi.pycapsule(scale_module.get_handler("negate")), platform="cpu"
    )
    x = jnp.arange(4, dtype=jnp.float32)
    out = jax.ffi.ffi_call("compat_by_hand.negate", jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
    np.testing.assert_array_equal(out, -np.arange(4))
    with pytest.raises(brainevent.KernelCallError, match="no function 'nope'"):
        scale_module.get_handler("nope")


def test_content_hash_is_the_library_digest(scale_module: brainevent.CompiledModule) -> None:
    import hashlib

    digest = hashlib.sha256(Path(scale_module.path).read_bytes()).hexdigest()
    assert scale_module.content_hash == "sha256:" + digest[:16]


def test_path_is_a_string_as_in_0_2_1(scale_module: brainevent.CompiledModule) -> None:
    path = scale_module.path
    assert isinstance(path, str) and os.fspath(path) == str(path)
    assert path.endswith(".so") and os.path.isfile(path)
    assert path + ".bak" == str(path) + ".bak" and "at " + path == "at " + str(path)
    assert json.loads(json.dumps({"p": path}))["p"] == path
    assert path.replace(".so", ".txt").endswith(".txt")  # str's replace, not Path's rename
    assert os.path.isfile(path)
    assert pickle.loads(pickle.dumps(path)) == path


def test_path_also_answers_like_a_pathlib_path(scale_module: brainevent.CompiledModule) -> None:
    path = scale_module.path
    assert path.is_file() and path.suffix == ".so" and path.parent == Path(str(path)).parent
    assert path / "x" == Path(str(path)) / "x"
    assert path.as_path() == Path(str(path))
    with pytest.raises(AttributeError, match="_private"):
        path._private  # noqa: B018


# -------------------------------------------------------------------------- diagnostics


def test_print_diagnostics_names_cache_and_targets(
    scale_module: brainevent.CompiledModule, capsys: pytest.CaptureFixture[str]
) -> None:
    brainevent.print_diagnostics()
    out = capsys.readouterr().out
    assert brainevent.get_cache_dir() in out
    assert "Registered FFI targets" in out and "compat_scale.negate" in out
    assert "jax" in out and "Host C++ compiler" in out


# ---------------------------------------------------------------------- normalize_tokens


def test_normalize_tokens_spells_aliases_canonically() -> None:
    assert brainevent.normalize_tokens(["args", "rets", "ctx.stream"]) == ["arg", "ret", "stream"]
    assert brainevent.normalize_tokens(["attrs.scale", "attr.n:i32"]) == ["attr.scale", "attr.n:int32"]
    assert brainevent.normalize_tokens("arg ret attr.x:float32") == ["arg", "ret", "attr.x:float32"]


def test_normalize_tokens_names_a_bad_token() -> None:
    with pytest.raises(brainevent.SpecError, match=r"'agr'.*Did you mean 'arg'"):
        brainevent.normalize_tokens(["agr", "ret"])


# ------------------------------------------------------------------------------ errors

OLD_AND_OURS = [
    ("KernelError", "SpecError"),
    ("KernelToolchainError", "ToolchainError"),
    ("NvccNotFoundError", None),
    ("HostCompilerNotFoundError", None),
    ("HeaderNotFoundError", None),
    ("GpuArchDetectionError", None),
    ("UnsupportedArchError", None),
    ("KernelCompilationError", "CompileError"),
    ("CompilationError", "CompileError"),
    ("HostCompilerIncompatibleError", None),
    ("KernelLoadError", "LoadError"),
    ("KernelRegistrationError", "RegistrationError"),
    ("KernelNotAvailableError", None),
    ("KernelExecutionError", None),
    ("CUDANotInstalledError", None),
]


@pytest.mark.parametrize(("old", "ours"), OLD_AND_OURS)
def test_0_2_1_error_names_are_exported_and_catch_ours(old: str, ours: str | None) -> None:
    cls = getattr(brainevent, old)
    assert issubclass(cls, brainevent.BrainEventError) and old in brainevent.__all__
    if ours is not None:
        assert issubclass(getattr(brainevent, ours), cls)
    err = cls("message", value=3)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls and str(back) == "message" and back.value == 3


def test_every_error_of_ours_is_a_kernel_error() -> None:
    for name in ("SpecError", "ToolchainError", "CompileError", "CacheError", "LoadError"):
        assert issubclass(getattr(brainevent, name), brainevent.KernelError)
    assert issubclass(brainevent.HostCompilerIncompatibleError, brainevent.ToolchainError)
    assert issubclass(brainevent.HostCompilerIncompatibleError, brainevent.CompilationError)
    assert issubclass(brainevent.KernelTypeError, TypeError)
    assert issubclass(brainevent.KernelTypeError, AssertionError)


def test_a_compile_error_is_caught_as_kernel_compilation_error(gxx: str) -> None:
    with pytest.raises(brainevent.KernelCompilationError, match="compat_broken") as info:
        brainevent.load_cpp_inline(
            name="compat_broken",
            cpp_sources=(
                '#include "brainevent/common.h"\n'
                "// @BE f arg ret\nvoid f(const BE::Tensor x, BE::Tensor o) { nope; }\n"
            ),
        )
    err = info.value
    assert isinstance(err, brainevent.CompilationError)
    assert "nope" in err.compiler_output and err.stage == "compile" and err.command == ""


def test_a_bad_arg_spec_is_caught_as_kernel_error() -> None:
    with pytest.raises(brainevent.KernelError, match="not a known token"):
        brainevent.load_cpp_inline(
            name="compat_bad_spec", cpp_sources="void f() {}", functions={"f": ["agr"]}
        )


def test_a_missing_host_compiler_is_host_compiler_not_found(monkeypatch: pytest.MonkeyPatch) -> None:
    from brainevent.toolchain.host import find_host_compiler

    monkeypatch.setenv("BRAINEVENT_CXX", "/nonexistent/bin/g++-99")
    with pytest.raises(brainevent.HostCompilerNotFoundError, match="g\\+\\+-99"):
        find_host_compiler()


def test_an_unusable_nvcc_is_nvcc_not_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from brainevent.toolchain.nvcc import clear_version_cache, find_nvcc

    fake = tmp_path / "nvcc"
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("BRAINEVENT_NVCC", str(fake))
    clear_version_cache()
    with pytest.raises(brainevent.NvccNotFoundError, match="not usable") as info:
        find_nvcc()
    assert isinstance(info.value, brainevent.KernelToolchainError)


def test_no_gpu_and_no_arch_is_gpu_arch_detection_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from brainevent.toolchain import cuda_driver
    from brainevent.toolchain.cuda_arch import resolve_archs

    monkeypatch.delenv("BRAINEVENT_CUDA_ARCH", raising=False)
    monkeypatch.setattr(cuda_driver, "_DRIVER_LIBRARY", "libcuda-absent-for-this-test.so.1")
    cuda_driver.clear_probe_cache()
    try:
        with pytest.raises(brainevent.GpuArchDetectionError, match="compute_capability"):
            resolve_archs(pinned=config.CUDA_ARCH.get())
    finally:
        cuda_driver.clear_probe_cache()


def test_an_arch_nvcc_cannot_build_is_unsupported_arch_error() -> None:
    from brainevent.toolchain.cuda_arch import check_archs_supported, parse_compute_capability

    with pytest.raises(brainevent.UnsupportedArchError, match="sm_70"):
        check_archs_supported(parse_compute_capability("sm_70"), (13, 0))


def test_a_too_new_host_compiler_is_host_compiler_incompatible(monkeypatch: pytest.MonkeyPatch) -> None:
    from brainevent.toolchain import host_compat
    from brainevent.toolchain.nvcc import NvccInfo

    monkeypatch.delenv("BRAINEVENT_ALLOW_UNSUPPORTED_COMPILER", raising=False)
    monkeypatch.setattr(host_compat, "host_compiler_version", lambda path: ("gcc", 99))
    nvcc = NvccInfo("/opt/nvcc", "/opt", (12, 9), "test", ())
    with pytest.raises(brainevent.HostCompilerIncompatibleError, match="gcc 99") as info:
        host_compat.check_host_compiler(nvcc, "/usr/bin/g++")
    assert isinstance(info.value, brainevent.KernelToolchainError)


# ------------------------------------------------------------ brainevent.config (0.2.1)


@pytest.fixture
def undo_config() -> Iterator[None]:
    yield
    config.set_override(config.CUDA_ARCH, None)
    config.set_override(config.NVCC_PREFER, None)


def test_set_compute_capability_pins_the_build_architectures(
    monkeypatch: pytest.MonkeyPatch, undo_config: None
) -> None:
    from brainevent.toolchain.cuda_arch import resolve_archs

    monkeypatch.setenv("BRAINEVENT_CUDA_ARCH", "sm_75")
    assert config.get_compute_capability() is None
    config.set_compute_capability("8.6, 8.0")
    assert config.get_compute_capability() == ["sm_86", "sm_80"]  # as given
    assert [a.sm for a in resolve_archs(pinned=config.CUDA_ARCH.get())] == [
        "sm_80",
        "sm_86",
    ]  # before the environment
    config.set_compute_capability(["compute_90"])
    assert config.get_compute_capability() == ["sm_90"]
    config.set_compute_capability(None)
    assert config.get_compute_capability() is None
    assert [a.sm for a in resolve_archs(pinned=config.CUDA_ARCH.get())] == ["sm_75"]


def test_set_compute_capability_refuses_a_bad_value(undo_config: None) -> None:
    with pytest.raises(brainevent.ToolchainError, match="'banana'"):
        config.set_compute_capability("banana")
    assert config.get_compute_capability() is None


@pytest.mark.nvcc
def test_prefer_system_nvcc_reorders_the_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, undo_config: None
) -> None:
    from brainevent.toolchain.nvcc import find_nvcc

    real = find_nvcc().path
    site = tmp_path / "site"
    (site / "nvidia" / "cu13" / "bin").mkdir(parents=True)
    # A script: cuda-pathfinder resolves symlinks, which would hide the wheel's place.
    (site / "nvidia" / "cu13" / "bin" / "nvcc").write_text(f'#!/bin/sh\nexec "{real}" "$@"\n')
    (site / "nvidia" / "cu13" / "bin" / "nvcc").chmod(0o755)
    (tmp_path / "toolkit" / "bin").mkdir(parents=True)
    (tmp_path / "toolkit" / "bin" / "nvcc").symlink_to(real)
    for name in ("BRAINEVENT_NVCC", "CONDA_PREFIX", "CUDA_PATH", "BRAINEVENT_NVCC_PREFER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "toolkit"))
    monkeypatch.setattr("site.getsitepackages", lambda: [str(site)])
    monkeypatch.setattr("site.ENABLE_USER_SITE", False)

    def found_via() -> str:
        return find_nvcc(default_roots=[]).found_via

    assert found_via() == "pip-wheel:nvidia-cuda-nvcc"
    config.prefer_system_nvcc()
    assert found_via() == "env:CUDA_HOME"
    config.prefer_system_nvcc(False)
    assert found_via() == "pip-wheel:nvidia-cuda-nvcc"
    monkeypatch.setenv("BRAINEVENT_NVCC_PREFER", "system")
    config.set_override(config.NVCC_PREFER, None)
    assert found_via() == "env:CUDA_HOME"
    with pytest.raises(config.ConfigError, match="True or False"):
        config.prefer_system_nvcc("yes")  # type: ignore[arg-type]


def test_numba_parallel_setting_is_recorded() -> None:
    numba = pytest.importorskip("numba")
    before = numba.get_num_threads()
    try:
        config.set_numba_parallel(True, num_threads=1)
        assert config.get_numba_parallel() and config.get_numba_num_threads() == 1
        assert numba.get_num_threads() == 1
        with pytest.raises(config.ConfigError, match="positive int"):
            config.set_numba_parallel(True, num_threads=1.5)  # type: ignore[arg-type]
    finally:
        config.set_numba_parallel(False)
        numba.set_num_threads(before)
    assert not config.get_numba_parallel() and config.get_numba_num_threads() is None


# 0.2.1's public names of this subsystem that this package provides (docs/compatibility.md).
PROVIDED = (
    "load_cpp_inline",
    "load_cpp_file",
    "load_cuda_inline",
    "load_cuda_file",
    "load_cuda_dir",
    "set_cache_dir",
    "get_cache_dir",
    "clear_cache",
    "print_diagnostics",
    "CompiledModule",
    "register_ffi_target",
    "list_registered_targets",
    "normalize_tokens",
    "numba_kernel",
    "numba_cuda_kernel",
    "numba_cuda_callable",
    "XLACustomKernel",
    "config",
    "BrainEventError",
    "KernelError",
    "KernelNotAvailableError",
    "KernelCompilationError",
    "KernelExecutionError",
    "KernelToolchainError",
    "CompilationError",
    "KernelRegistrationError",
    "CUDANotInstalledError",
    "NvccNotFoundError",
    "HostCompilerNotFoundError",
    "HeaderNotFoundError",
    "GpuArchDetectionError",
    "HostCompilerIncompatibleError",
    "UnsupportedArchError",
    "KernelLoadError",
)


def test_0_2_1_names_are_reachable_after_a_bare_import() -> None:
    import subprocess
    import sys

    code = (
        "import brainevent\n"
        f"missing = [n for n in {PROVIDED!r} if not hasattr(brainevent, n)]\n"
        "assert not missing, missing\n"
        "brainevent.config.set_compute_capability('sm_80')\n"
        "assert brainevent.config.get_compute_capability() == ['sm_80']\n"
        "print('ok')\n"
    )
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]
