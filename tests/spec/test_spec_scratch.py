"""The `scratch` token: parsing, inference from a BE::Scratch parameter, binding checks, and
the manifest round trip of its size."""

from __future__ import annotations

import pytest

from brainevent.cache.manifest import spec_to_json
from brainevent.errors import SpecError
from brainevent.runtime.module import spec_from_json
from brainevent.spec.bind import bind_tokens, infer_spec
from brainevent.spec.model import FunctionSpec, Role
from brainevent.spec.signature import pick_one, scan_functions
from brainevent.spec.tokens import parse_tokens

SOURCE = "void f(const BE::Tensor x, BE::Tensor out, BE::Scratch work, int64_t stream) {}\n"


def _signature(source: str = SOURCE):  # type: ignore[no-untyped-def]
    sig = pick_one("f", scan_functions(source, "k.cpp"))
    assert sig is not None
    return sig


def test_bare_and_sized_scratch_tokens() -> None:
    bare, sized = parse_tokens("f", ["scratch"]), parse_tokens("f", ["scratch:4096"])
    assert bare[0].role is Role.SCRATCH and bare[0].scratch_bytes is None and bare[0].canonical == "scratch"
    assert sized[0].role is Role.SCRATCH and sized[0].scratch_bytes == 4096
    assert sized[0].canonical == "scratch:4096"


@pytest.mark.parametrize("size", ["", "-1", "4k", "1.5", "0x10", "٣"])
def test_a_scratch_size_that_is_not_a_byte_count_is_refused(size: str) -> None:
    with pytest.raises(SpecError, match=r"after 'scratch:' is not a byte count.*'scratch:4096'") as info:
        parse_tokens("f", ["arg", "ret", f"scratch:{size}"])
    assert info.value.data["value"] == size and info.value.data["position"] == 3


def test_two_scratch_tokens_are_refused() -> None:
    with pytest.raises(SpecError, match=r"token 3 'scratch:8' is a second scratch token \(the first is 2\)"):
        parse_tokens("f", ["arg", "scratch", "scratch:8", "ret"])


def test_a_typo_suggests_scratch() -> None:
    with pytest.raises(SpecError, match=r"Did you mean 'scratch'\?"):
        parse_tokens("f", ["arg", "ret", "scrach"])


def test_a_be_scratch_parameter_infers_the_scratch_token() -> None:
    tokens = infer_spec(_signature())
    assert [t.canonical for t in tokens] == ["arg", "ret", "scratch", "stream"]


def test_binding_keeps_the_size_and_the_cxx_type() -> None:
    params = bind_tokens(_signature(), parse_tokens("f", "arg ret scratch:256 stream"))
    assert params[2].role is Role.SCRATCH and params[2].scratch_bytes == 256
    assert params[2].cxx_type == "BE::Scratch" and params[2].name == "work"


def test_scratch_token_on_a_tensor_parameter_is_refused() -> None:
    with pytest.raises(
        SpecError, match=r"token 2 'scratch' does not fit C\+\+ parameter 2 .*BE::Scratch parameter"
    ):
        bind_tokens(_signature(), parse_tokens("f", "arg scratch ret stream"))


def test_a_tensor_token_on_a_scratch_parameter_suggests_scratch() -> None:
    with pytest.raises(SpecError, match=r"use 'scratch' \(or 'scratch:<bytes>'\) for this BE::Scratch"):
        bind_tokens(_signature(), parse_tokens("f", "arg ret ret stream"))


def test_scratch_by_non_const_reference_is_refused() -> None:
    sig = _signature("void f(const BE::Tensor x, BE::Tensor out, BE::Scratch& work) {}\n")
    with pytest.raises(SpecError, match=r"take BE::Scratch by value or const&"):
        infer_spec(sig)


def test_scratch_by_const_reference_is_accepted() -> None:
    sig = _signature("void f(const BE::Tensor x, BE::Tensor out, const BE::Scratch& work) {}\n")
    assert [t.canonical for t in infer_spec(sig)] == ["arg", "ret", "scratch"]


def test_the_manifest_keeps_the_scratch_size() -> None:
    params = bind_tokens(_signature(), parse_tokens("f", "arg ret scratch:4096 stream"))
    spec = FunctionSpec("f", params, "k.cpp", 1)
    back = spec_from_json("f", spec_to_json(spec))
    assert back == spec and back.tokens() == ["arg", "ret", "scratch:4096", "stream"]
    assert spec_to_json(spec)["params"][0] == ["arg", "x", None, "const BE::Tensor"]  # older rows unchanged
