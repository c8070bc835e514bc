"""The declarations of the arg_spec grammar: ``arg:<type>``, ``ret:...:zeros``, result dims from
input dims (``x.shape[k]``), ``vmap_method=`` and ``num_batch_dims=``: parsed, canonical, and a
``SpecError`` naming the token for each bad one (before anything compiles)."""

from __future__ import annotations

import pytest

from brainevent.errors import SpecError
from brainevent.spec.declarations import parse_spec
from brainevent.spec.resolve import resolve_functions

pytestmark = pytest.mark.unit

SRC = """
void seg(const BE::Tensor x, const BE::Tensor ids, BE::Tensor out, int64_t n) {}
"""


def _resolve(tokens):
    return resolve_functions({"seg": tokens}, [("seg.cpp", SRC)])[0]


def test_declarations_parse_to_a_canonical_spec():
    spec = _resolve(
        "args:f32 arg:int32 ret:(n,x.shape[1]):float:zeros attr.n vmap_method=sequential num_batch_dims=1"
    )
    assert spec.tokens() == [
        "arg:float32",
        "arg:int32",
        "ret:(n,x.shape[1]):float32:zeros",
        "attr.n:int64",
        "vmap_method=sequential",
        "num_batch_dims=1",
    ]
    assert (spec.vmap_method, spec.num_batch_dims) == ("sequential", 1)
    assert [p.dtype for p in spec.args] == ["float32", "int32"]
    # The canonical spec reads back to the same spec.
    assert _resolve(spec.tokens()) == spec


def test_an_annotation_carries_declarations_and_declarations_alone_infer_the_rest():
    src = "// @BE seg broadcast vmap_method=broadcast_all\n" + SRC
    with pytest.raises(SpecError):  # 'broadcast' is no token
        resolve_functions(None, [("a.cpp", src)])
    spec = resolve_functions(None, [("a.cpp", src.replace("broadcast ", ""))])[0]
    assert spec.tokens() == ["arg", "arg", "ret", "attr.n:int64", "vmap_method=broadcast_all"]


@pytest.mark.parametrize(
    ("tokens", "words"),
    [
        ("arg:flaot arg ret attr.n", ["'flaot'", "not a scalar type", "arg:<type>"]),
        (
            "arg arg ret attr.n vmap_methd=sequential",
            ["unknown 'vmap_methd'", "Did you mean 'vmap_method=sequential'"],
        ),
        (
            "arg arg ret attr.n vmap_method=sequentail",
            ["not a vmap method", "Did you mean 'vmap_method=sequential'"],
        ),
        ("arg arg ret attr.n num_batch_dims=0", ["num_batch_dims takes a positive integer"]),
        ("arg arg ret attr.n num_batch_dims=1 num_batch_dims=2", ["a second time"]),
        ("arg arg ret:(y.shape[0]):float32 attr.n", ["names 'y', which is not an input", "x, ids"]),
        ("arg arg ret:(x.shape[300]):float32 attr.n", ["indexes past dim 255"]),
        ("arg arg ret:(m):float32 attr.n", ["dim 'm'", "x.shape[0]"]),
        ("arg arg ret:(n):float32:zero attr.n", ["not a result shape", ":zeros"]),
        ("arg arg ret:zeros attr.n vmap_method=expand_dims", ["'ret:zeros'", "broadcast_all", "sequential"]),
    ],
)
def test_bad_declarations_are_spec_errors(tokens, words):
    with pytest.raises(SpecError) as info:
        _resolve(tokens)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_parse_spec_splits_declarations_from_parameter_tokens():
    tokens, options = parse_spec("f", ["arg", "num_batch_dims=2", "ret:like(x):zeros"])
    assert [t.canonical for t in tokens] == ["arg", "ret:like(x):zeros"]
    assert options == {"num_batch_dims": 2}
    _, options = parse_spec("f", "arg ret:zeros")
    assert options == {}


def test_declarations_survive_the_manifest():
    from brainevent.cache.manifest import spec_to_json
    from brainevent.cache.records import function_table
    from brainevent.runtime.module import spec_from_json

    spec = _resolve(
        "arg:float32 arg ret:(x.shape[0]):float32:zeros attr.n vmap_method=sequential num_batch_dims=1"
    )
    row = spec_to_json(spec)
    function_table({"seg": row}, "manifest")  # the row passes the manifest's own check
    assert spec_from_json("seg", row) == spec
    plain = spec_to_json(_resolve("arg arg ret attr.n"))
    assert "vmap_method" not in plain and "num_batch_dims" not in plain  # older rows read the same


def test_normalize_tokens_keeps_declarations():
    import brainevent

    tokens = "args:f32 rets:(n,x.shape[0]):float:zeros attrs.n:i64 num_batch_dims=1"
    assert brainevent.normalize_tokens(tokens) == [
        "arg:float32",
        "ret:(n,x.shape[0]):float32:zeros",
        "attr.n:int64",
        "num_batch_dims=1",
    ]
    with pytest.raises(SpecError, match="Did you mean 'num_batch_dims=1'"):
        brainevent.normalize_tokens(["arg", "num_batch_dim=1"])
