"""Which flags reach which compiler: C standards to C units, C++ standards to C++ units,
nvcc's own options never to the host C compiler; OpenMP spellings read as one switch."""

from __future__ import annotations

import pytest

from brainevent.errors import SpecError
from brainevent.platforms.languages import c_flags, cxx_flags, host_flags_from_nvcc
from brainevent.runtime.openmp import openmp_runtime_loaded
from brainevent.stages.request import make_options


def test_c_units_get_gnu17_unless_a_c_standard_is_given() -> None:
    assert c_flags(["-Wall"]) == ["-std=gnu17", "-Wall"]
    assert c_flags(["-std=c11", "-Wall"]) == ["-std=c11", "-Wall"]
    assert c_flags(["-std=iso9899:1999"]) == ["-std=iso9899:1999"]


def test_a_cxx_standard_never_reaches_a_c_unit_and_back() -> None:
    assert c_flags(["-std=c++20", "-DX=1"]) == ["-std=gnu17", "-DX=1"]
    assert cxx_flags(["-std=c11", "-std=c++20", "-DX=1"]) == ["-std=c++20", "-DX=1"]
    assert cxx_flags(["-std=gnu++17"]) == ["-std=gnu++17"]


def test_the_host_share_of_nvcc_flags() -> None:
    flags = [
        "-Xcompiler=-fno-strict-aliasing,-Wall",
        "-Xcompiler",
        "-march=native",
        "--expt-relaxed-constexpr",
        "-gencode=arch=compute_80,code=sm_80",
        "-arch",
        "sm_80",
        "-DN=4",
        "-I",
        "/opt/inc",
        "--use_fast_math",
        "-O2",
    ]
    assert host_flags_from_nvcc(flags) == [
        "-fno-strict-aliasing",
        "-Wall",
        "-march=native",
        "-DN=4",
        "-I",
        "/opt/inc",
        "-ffast-math",
        "-O2",
    ]


@pytest.mark.parametrize(
    ("cflags", "ldflags"),
    [(["-fopenmp", "-O2"], []), (["-Xcompiler=-fopenmp", "-O2"], []), (["-O2"], ["-fopenmp"])],
)
def test_openmp_flags_are_the_openmp_option(cflags: list[str], ldflags: list[str]) -> None:
    options = make_options("m", {"extra_cflags": cflags, "extra_ldflags": ldflags})
    assert options.openmp is True
    assert options.extra_cflags == ("-O2",)
    assert options.extra_ldflags == ()
    assert options == make_options("m", {"extra_cflags": ["-O2"], "openmp": True})


def test_openmp_must_be_a_bool() -> None:
    with pytest.raises(SpecError, match=r"openmp='yes' must be True or False"):
        make_options("m", {"openmp": "yes"})


def test_openmp_runtime_seen_in_the_process_map() -> None:
    line = "7f00-7f10 r-xp 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/{}\n"
    assert openmp_runtime_loaded(line.format("libgomp.so.1.0.0"))
    assert openmp_runtime_loaded(line.format("libomp.so.5"))
    assert not openmp_runtime_loaded(line.format("libgomp-plugin-nvptx.txt") + line.format("libm.so.6"))
