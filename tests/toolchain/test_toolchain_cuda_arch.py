"""Compute capability parsing, nvcc -gencode flags and the choice of what to build for."""

from __future__ import annotations

import importlib.util
import pickle
from pathlib import Path

import pytest

from brainevent import config
from brainevent.errors import ArchError, KernelCallError, ToolchainError
from brainevent.toolchain import cuda_driver
from brainevent.toolchain.cuda_arch import (
    CudaArch,
    check_archs_supported,
    gencode_flags,
    nvrtc_arch,
    one_arch,
    parse_compute_capability,
    resolve_archs,
    supported_archs,
)

A = CudaArch


@pytest.mark.parametrize(
    ("value", "nvrtc", "cc"),
    [
        ("8.0", "sm_80", 80),
        ("sm_80", "sm_80", 80),
        ("80", "sm_80", 80),
        (80, "sm_80", 80),
        ("compute_90a", "compute_90a", 90),
        ("compute_90", "compute_90", 90),
        ("sm_90a", "sm_90a", 90),
        (" SM_120 ", "sm_120", 120),
        ("12.1", "sm_121", 121),
        ((8, 6), "sm_86", 86),
    ],
)
def test_one_architecture_for_nvrtc_and_triton(value: object, nvrtc: str, cc: int) -> None:
    assert nvrtc_arch(value) == nvrtc
    assert one_arch(value).cc == cc


@pytest.mark.parametrize(
    "value", ["sm_x", "hopper", "sm_80,sm_90", ["sm_80", "sm_90"], "compute_9.0", 7, None]
)
def test_bad_single_architecture_is_a_typed_error(value: object) -> None:
    with pytest.raises(ArchError, match=r"Accepted forms") as info:
        nvrtc_arch(value)
    assert repr(value) in str(info.value)
    # An argument error to callers of a kernel, a toolchain error to those of a build.
    assert isinstance(info.value, KernelCallError) and isinstance(info.value, ToolchainError)
    assert info.value.value == value  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("8.6", (A(8, 6),)),
        ("86", (A(8, 6),)),
        ("sm_86", (A(8, 6),)),
        ("SM_86", (A(8, 6),)),
        ("compute_86", (A(8, 6),)),
        (" sm_86 ", (A(8, 6),)),
        ("90a", (A(9, 0, "a"),)),
        ("sm_90a", (A(9, 0, "a"),)),
        ("compute_90a", (A(9, 0, "a"),)),
        ("9.0a", (A(9, 0, "a"),)),
        ("12.0", (A(12, 0),)),
        ("120", (A(12, 0),)),
        ("sm_100f", (A(10, 0, "f"),)),
        ("sm_35", (A(3, 5),)),
        (86, (A(8, 6),)),
        (120, (A(12, 0),)),
        (8.6, (A(8, 6),)),
        (12.0, (A(12, 0),)),
        ((8, 6), (A(8, 6),)),
        ((12, 0), (A(12, 0),)),
        ([8, 6], None),  # a list is a list of archs, never a pair: see the bad cases
        ("sm_80,sm_90", (A(8, 0), A(9, 0))),
        ("sm_90, sm_80", (A(8, 0), A(9, 0))),
        ("8.0 9.0", (A(8, 0), A(9, 0))),
        ("sm_90,sm_80 sm_90", (A(8, 0), A(9, 0))),
        (["sm_90", 80, "8.6", 8.9], (A(8, 0), A(8, 6), A(8, 9), A(9, 0))),
        (("sm_80", "sm_90a"), (A(8, 0), A(9, 0, "a"))),
        ((80, 90), (A(8, 0), A(9, 0))),
        ([A(9, 0), "sm_90"], (A(9, 0),)),
        (A(7, 5), (A(7, 5),)),
    ],
)
def test_accepted_forms(value: object, expected: tuple[CudaArch, ...] | None) -> None:
    if expected is None:
        with pytest.raises(ToolchainError):
            parse_compute_capability(value)
        return
    assert parse_compute_capability(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "",
        "   ",
        ",",
        "sm_",
        "sm_8.6",
        "compute_8.6",
        "8",
        "8.",
        ".6",
        "8.10",
        "1234",
        "sm_86x",
        "86a",  # "a" exists only from sm_90 on
        "sm_90f",  # "f" only from sm_100 on
        "ampere",
        "native",
        "sm_80;sm_90",
        9,
        860,
        -86,
        True,
        8.65,
        86.0,
        None,
        [],
        (),
        ["sm_80", "bogus"],
        {"sm": 80},
        b"sm_80",
    ],
)
def test_bad_forms_name_the_value_and_suggest(value: object) -> None:
    with pytest.raises(ToolchainError) as info:
        parse_compute_capability(value)
    text = str(info.value)
    assert "is not valid" in text
    assert 'compute_capability="sm_86"' in text
    assert '"sm_90a"' in text  # the list of accepted forms
    assert isinstance(info.value, RuntimeError)  # ToolchainError's base


def test_bad_value_names_the_offending_item_in_a_list() -> None:
    with pytest.raises(ToolchainError) as info:
        parse_compute_capability(["sm_80", "bogus"])
    assert "'bogus'" in str(info.value)
    assert info.value.value == "bogus"  # type: ignore[attr-defined]
    clone = pickle.loads(pickle.dumps(info.value))
    assert str(clone) == str(info.value)


def test_arch_properties_and_order() -> None:
    arch = A(9, 0, "a")
    assert (arch.sm, arch.compute, arch.number, str(arch)) == (
        "sm_90a",
        "compute_90a",
        "90a",
        "sm_90a",
    )
    assert sorted([A(12, 0), A(9, 0, "a"), A(8, 6), A(9, 0), A(10, 0, "f")]) == [
        A(8, 6),
        A(9, 0),
        A(9, 0, "a"),
        A(10, 0, "f"),
        A(12, 0),
    ]


def test_gencode_sm80_sm90_ptx_only_for_90() -> None:
    flags = gencode_flags(parse_compute_capability("sm_90,sm_80"))
    assert flags == [
        "-gencode=arch=compute_80,code=sm_80",
        "-gencode=arch=compute_90,code=sm_90",
        "-gencode=arch=compute_90,code=compute_90",
    ]


def test_gencode_no_ptx_for_arch_specific() -> None:
    flags = gencode_flags([A(8, 0), A(9, 0, "a")])
    assert flags == [
        "-gencode=arch=compute_80,code=sm_80",
        "-gencode=arch=compute_90a,code=sm_90a",
        "-gencode=arch=compute_80,code=compute_80",
    ]
    assert gencode_flags([A(10, 0, "a")]) == ["-gencode=arch=compute_100a,code=sm_100a"]


def test_supported_archs_cuda13_drops_volta() -> None:
    support = supported_archs((13, 0))
    assert support.lowest == A(7, 5)
    assert A(7, 5) in support and A(12, 1) in support and A(9, 0, "a") in support
    assert A(7, 0) not in support
    with pytest.raises(ToolchainError) as info:
        check_archs_supported([A(7, 0), A(8, 0)], (13, 0))
    text = str(info.value)
    assert "sm_70" in text and "sm_75 and newer" in text and "CUDA 12" in text
    assert info.value.archs == ("sm_70",)  # type: ignore[attr-defined]


def test_supported_archs_cuda12() -> None:
    check_archs_supported([A(5, 0), A(7, 0), A(9, 0, "a")], (12, 4))
    with pytest.raises(ToolchainError, match="sm_35"):
        check_archs_supported([A(3, 5)], (12, 0))
    with pytest.raises(ToolchainError, match="up to sm_90"):
        check_archs_supported([A(10, 0)], (12, 6))
    check_archs_supported([A(10, 0), A(12, 0)], (12, 8))
    with pytest.raises(ToolchainError, match="'f'"):
        check_archs_supported([A(10, 0, "f")], (12, 8))
    check_archs_supported([A(10, 0, "f")], (12, 9))


def test_supported_archs_newer_nvcc_has_no_ceiling() -> None:
    assert supported_archs((13, 5)).highest == A(12, 1)
    support = supported_archs((14, 2))
    assert support.highest is None and support.lowest == A(7, 5)
    assert A(15, 0) in support
    with pytest.raises(ToolchainError, match="too old"):
        supported_archs((10, 2))


# --------------------------------------------------------------- resolve_archs


@pytest.fixture
def no_pin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BRAINEVENT_CUDA_ARCH", raising=False)


def test_resolve_argument_wins_over_pin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAINEVENT_CUDA_ARCH", "sm_80")
    assert resolve_archs("sm_90", pinned=config.CUDA_ARCH.get()) == (A(9, 0),)


def test_resolve_env_pin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAINEVENT_CUDA_ARCH", "sm_80,sm_90")
    assert resolve_archs(pinned=config.CUDA_ARCH.get()) == (A(8, 0), A(9, 0))


def test_resolve_bad_env_pin_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAINEVENT_CUDA_ARCH", "volta")
    with pytest.raises(ToolchainError) as info:
        resolve_archs(pinned=config.CUDA_ARCH.get())
    assert str(info.value).startswith("BRAINEVENT_CUDA_ARCH='volta'")
    assert info.value.variable == "BRAINEVENT_CUDA_ARCH"  # type: ignore[attr-defined]


def test_resolve_checks_against_nvcc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAINEVENT_CUDA_ARCH", "sm_70")
    with pytest.raises(ToolchainError, match="cannot build for sm_70"):
        resolve_archs(pinned=config.CUDA_ARCH.get(), nvcc_version=(13, 0))
    assert resolve_archs(pinned=config.CUDA_ARCH.get(), nvcc_version=(12, 9)) == (A(7, 0),)


def test_resolve_without_gpu_says_how_to_pin(no_pin: None) -> None:
    probe = cuda_driver.probe_devices()
    if probe.available:
        pytest.skip("not applicable: a GPU is visible here")
    with pytest.raises(ToolchainError) as info:
        resolve_archs(pinned=config.CUDA_ARCH.get())
    text = str(info.value)
    assert "no GPU was found" in text
    assert probe.reason in text
    assert 'compute_capability="sm_90"' in text
    assert "BRAINEVENT_CUDA_ARCH=sm_80,sm_90" in text
    assert info.value.reason == probe.reason  # type: ignore[attr-defined]


@pytest.mark.host
def test_resolve_from_driver_devices(
    no_pin: None, monkeypatch: pytest.MonkeyPatch, stub_driver_two_gpus: str
) -> None:
    real_probe = cuda_driver.probe_devices
    monkeypatch.setattr(cuda_driver, "probe_devices", lambda library=None: real_probe(stub_driver_two_gpus))
    assert resolve_archs(pinned=config.CUDA_ARCH.get()) == (A(8, 6), A(9, 0))


@pytest.fixture
def stub_driver_two_gpus(tmp_path_factory: pytest.TempPathFactory) -> str:
    # The stub builder lives beside this file; load it by path so any import mode works.
    path = Path(__file__).with_name("test_toolchain_cuda_driver.py")
    spec = importlib.util.spec_from_file_location("_cuda_driver_stub_builder", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_stub(tmp_path_factory.mktemp("stub"), init_result=0, devices=((9, 0), (8, 6)))
