"""extra_libraries: NVIDIA libraries found by cuda-pathfinder, compiled, linked with a runtime
path, keyed by which file was linked, and loaded before the module.

The CPU tests link the CUDA runtime (cudart, which needs no GPU to report its version); the
nvcc tests link CUPTI and cuBLAS into CUDA modules without running them; the gpu test runs a
cuBLAS sgemm on XLA's stream.
"""

from __future__ import annotations

import ctypes
import os
import subprocess

import numpy as np
import pytest

import brainevent
from brainevent.errors import NvidiaLibraryNotFoundError, SpecError


def _found(name: str):  # type: ignore[no-untyped-def]
    from brainevent.toolchain.nvidia_libs import find_library

    try:
        return find_library(name)
    except NvidiaLibraryNotFoundError:
        return None


def _dynamic_section(path: str) -> str:
    return subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout


RUNTIME_VERSION = r"""
#include <cuda_runtime_api.h>
#include "brainevent/common.h"

void runtime_version(const BE::Tensor x, BE::Tensor out) {
  int version = 0;
  BE_CHECK(cudaRuntimeGetVersion(&version) == cudaSuccess);
  out.data<int32_t>()[0] = version;
}
"""


@pytest.mark.parametrize("bad", ["cublsa", "libcublas.so", "CUBLAS"])
def test_an_unknown_library_names_the_value_and_the_supported_ones(bad: str) -> None:
    with pytest.raises(
        SpecError,
        match=rf"entry {bad!r} is not an NVIDIA library cuda-pathfinder knows; "
        r"supported: .*cublas.*curand.*extra_ldflags=",
    ) as info:
        brainevent.load_cpp_inline("libs_bad", "void f() {}", functions=["f"], extra_libraries=[bad])
    assert info.value.data["value"] == bad


def test_a_typo_suggests_the_library() -> None:
    with pytest.raises(SpecError, match=r"Did you mean 'curand'\?"):
        brainevent.load_cpp_inline("libs_bad", "void f() {}", functions=["f"], extra_libraries=["curnad"])


def test_a_bare_string_is_refused() -> None:
    with pytest.raises(SpecError, match=r"extra_libraries='cublas' must be a list of NVIDIA library names"):
        brainevent.load_cpp_inline("libs_bad", "void f() {}", functions=["f"], extra_libraries="cublas")


def test_cudart_is_refused_for_a_cuda_module() -> None:
    with pytest.raises(SpecError, match=r"already has the CUDA runtime .* remove 'cudart'"):
        brainevent.load_cuda_inline("libs_bad", "void f() {}", functions=["f"], extra_libraries=["cudart"])


def test_a_missing_library_says_what_to_install() -> None:
    missing = next((n for n in ("cufile", "cudla", "nvjpeg", "curand", "cublas") if _found(n) is None), None)
    if missing is None:
        pytest.skip("not applicable: every candidate library is installed here")
    with pytest.raises(
        NvidiaLibraryNotFoundError, match=rf"cannot use {missing!r}: .* Fix: pip install"
    ) as info:
        brainevent.load_cpp_inline("libs_missing", "void f() {}", functions=["f"], extra_libraries=[missing])
    assert info.value.data["library"] == missing


@pytest.fixture(scope="module")
def cudart():  # type: ignore[no-untyped-def]
    found = _found("cudart")
    if found is None:
        pytest.skip("cuda-pathfinder finds no CUDA runtime (cudart) here")
    return found


def test_a_cpu_module_calls_the_cuda_runtime_it_links(cudart) -> None:  # type: ignore[no-untyped-def]
    import jax
    import jax.numpy as jnp

    mod = brainevent.load_cpp_inline(
        "libs_cudart", RUNTIME_VERSION, functions=["runtime_version"], extra_libraries=["cudart"]
    )
    got = mod.runtime_version(np.zeros(1, np.float32), outs=jax.ShapeDtypeStruct((1,), jnp.int32))
    expected = ctypes.c_int()
    assert ctypes.CDLL(cudart.path).cudaRuntimeGetVersion(ctypes.byref(expected)) == 0
    assert int(np.asarray(got)[0]) == expected.value > 0

    section = _dynamic_section(str(mod.path))
    assert f"[{os.path.basename(cudart.path)}]" in section  # DT_NEEDED: the soname of the linked file
    assert f"[{cudart.directory}]" in section  # RUNPATH: where pathfinder found it


def test_the_key_records_which_library_was_linked(cudart) -> None:  # type: ignore[no-untyped-def]
    from brainevent.platforms import create
    from brainevent.stages import module_key as key_stage
    from brainevent.stages.request import LoadRequest, inline_unit, make_options

    def record(libraries):  # type: ignore[no-untyped-def]
        options = make_options("libs_key", {"extra_libraries": libraries})
        unit = inline_unit("libs_key", "void f() {}", "cpp_sources", ".cpp")
        return key_stage.derive_key(LoadRequest((unit,), ["f"], options, create("cpu")))

    with_lib, without = record(["cudart"]), record(None)
    assert without.record["extra_libraries"] == [] and "nvidia_libraries" not in without.record
    [(name, found_via, identity, include_dir), *crt] = with_lib.record["nvidia_libraries"]
    # a pip runtime wheel without crt/ headers: the key also records where they come from
    assert crt == [] or (len(crt) == 1 and crt[0][0] == "crt")
    assert (name, found_via, include_dir) == ("cudart", cudart.found_via, cudart.include_dir)
    assert identity.startswith(os.path.realpath(cudart.path) + ":")  # real path, size, mtime
    assert with_lib.exact != without.exact and with_lib.portable != without.portable


CUPTI_VERSION = r"""
#include <cstdint>
#include "brainevent/common.h"
extern "C" int cuptiGetVersion(uint32_t* version);  // CUPTI's headers are outside pathfinder's table

void cupti_version(const BE::Tensor x, BE::Tensor out) {
  uint32_t version = 0;
  BE_CHECK(cuptiGetVersion(&version) == 0);
  out.data<int32_t>()[0] = static_cast<int32_t>(version);
}
"""


@pytest.mark.nvcc
def test_a_cuda_module_links_a_library_with_its_runtime_path() -> None:
    cupti = _found("cupti")
    if cupti is None:
        pytest.skip("cuda-pathfinder finds no CUPTI here")
    mod = brainevent.load_cuda_inline(
        "libs_cupti",
        CUPTI_VERSION,
        functions=["cupti_version"],
        extra_libraries=["cupti"],
        compute_capability="sm_80",
        auto_register=False,
    )
    section = _dynamic_section(str(mod.path))
    assert f"[{os.path.basename(cupti.path)}]" in section and f"[{cupti.directory}]" in section


# A launcher calling cuBLAS on XLA's stream: out = a @ b for row-major float32 matrices
# (cuBLAS is column-major, so it computes out^T = b^T a^T).
SGEMM = r"""
#include <cublas_v2.h>
#include "brainevent/common.h"

void sgemm(const BE::Tensor a, const BE::Tensor b, BE::Tensor out, cudaStream_t stream) {
  static thread_local cublasHandle_t handle = nullptr;
  if (handle == nullptr) BE_CHECK(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS);
  BE_CHECK(cublasSetStream(handle, stream) == CUBLAS_STATUS_SUCCESS);
  const int m = static_cast<int>(a.size(0)), k = static_cast<int>(a.size(1)), n = static_cast<int>(b.size(1));
  const float one = 1.0f, zero = 0.0f;
  const cublasStatus_t status = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b.data<float>(),
                                            n, a.data<float>(), k, &zero, out.data<float>(), n);
  BE_CHECK(status == CUBLAS_STATUS_SUCCESS) << "cublasSgemm failed with status " << static_cast<int>(status);
}
"""


@pytest.fixture(scope="module")
def cublas():  # type: ignore[no-untyped-def]
    found = _found("cublas")
    if found is None:
        pytest.skip("cuda-pathfinder finds no cuBLAS here (pip install nvidia-cublas)")
    return found


@pytest.mark.nvcc
def test_a_cublas_launcher_builds_against_the_found_cublas(cublas) -> None:  # type: ignore[no-untyped-def]
    mod = brainevent.load_cuda_inline(
        "libs_sgemm_build",
        SGEMM,
        functions=["sgemm"],
        extra_libraries=["cublas"],
        compute_capability="sm_80",
        auto_register=False,
    )
    assert mod.specs == {"sgemm": ["arg", "arg", "ret", "stream"]}
    section = _dynamic_section(str(mod.path))
    assert f"[{os.path.basename(cublas.path)}]" in section and f"[{cublas.directory}]" in section


@pytest.mark.gpu
@pytest.mark.nvcc
def test_cublas_sgemm_on_xlas_stream_matches_numpy(cublas) -> None:  # type: ignore[no-untyped-def]
    import jax
    import jax.numpy as jnp

    mod = brainevent.load_cuda_inline("libs_sgemm", SGEMM, functions=["sgemm"], extra_libraries=["cublas"])
    rng = np.random.default_rng(2)
    a = rng.standard_normal((64, 48)).astype(np.float32)
    b = rng.standard_normal((48, 80)).astype(np.float32)

    @jax.jit
    def matmul(x, y):  # type: ignore[no-untyped-def]
        return mod.sgemm(x, y, outs=jax.ShapeDtypeStruct((64, 80), jnp.float32)) * 2.0

    got = np.asarray(matmul(jnp.asarray(a), jnp.asarray(b)))
    np.testing.assert_allclose(got, (a @ b) * 2.0, rtol=1e-4, atol=1e-4)
