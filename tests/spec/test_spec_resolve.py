"""resolve_functions: the entry point the rest of the library uses."""

from __future__ import annotations

import pickle

import pytest

from brainevent.errors import SpecError
from brainevent.spec.model import FunctionSpec, Param, Role
from brainevent.spec.resolve import resolve_functions
from tests.support.kernels import CUDA_VECTOR_ADD

KERNELS = (
    CUDA_VECTOR_ADD
    + r"""
__global__ void scale_kernel(const float* x, float* out, float s, int n) {}

// @BE scale_by arg ret attr.scale_factor:float32 stream
void scale_by(const BE::Tensor x, BE::Tensor out, float scale_factor, int64_t stream) {
    scale_kernel<<<1, 256, 0, (cudaStream_t)stream>>>(nullptr, nullptr, scale_factor, 0);
}
"""
)

BARE_ATTR = KERNELS.replace("attr.scale_factor:float32", "attr.scale_factor")

VECTOR_ADD = FunctionSpec(
    "vector_add",
    (
        Param(Role.ARG, "a", None, "const BE::Tensor"),
        Param(Role.ARG, "b", None, "const BE::Tensor"),
        Param(Role.RET, "out", None, "BE::Tensor"),
        Param(Role.STREAM, "stream", None, "int64_t"),
    ),
    "kernels.cu",
    11,
)
SCALE_BY = FunctionSpec(
    "scale_by",
    (
        Param(Role.ARG, "x", None, "const BE::Tensor"),
        Param(Role.RET, "out", None, "BE::Tensor"),
        Param(Role.ATTR, "scale_factor", "float32", "float"),
        Param(Role.STREAM, "stream", None, "int64_t"),
    ),
    "kernels.cu",
    23,
)


def resolve(functions: object, source: str = KERNELS) -> list[FunctionSpec]:
    return resolve_functions(functions, [("kernels.cu", source)])  # type: ignore[arg-type]


def error(functions: object, source: str = KERNELS, *needles: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        resolve(functions, source)
    message = str(info.value)
    for needle in needles:
        assert needle in message, (needle, message)
    return info.value


# -- the seed examples ------------------------------------------------------------


@pytest.mark.parametrize("source", [KERNELS, BARE_ATTR])
def test_seed_examples_from_annotations(source: str) -> None:
    specs = resolve(None, source)
    assert specs == [VECTOR_ADD, SCALE_BY]
    assert specs[0].tokens() == ["arg", "arg", "ret", "stream"]
    assert specs[1].tokens() == ["arg", "ret", "attr.scale_factor:float32", "stream"]
    assert [p.name for p in specs[1].attrs] == ["scale_factor"]


def test_dict_with_lists_tuples_and_strings() -> None:
    specs = resolve(
        {
            "scale_by": "args rets attrs.scale_factor:float ctx.stream",
            "vector_add": ("arg", "arg", "ret", "stream"),
        }
    )
    assert specs == [SCALE_BY, VECTOR_ADD]


def test_dict_value_none_infers() -> None:
    assert resolve({"vector_add": None}) == [VECTOR_ADD]


@pytest.mark.parametrize("names", [["vector_add", "scale_by"], ("vector_add", "scale_by")])
def test_list_of_names_infers(names: object) -> None:
    assert resolve(names) == [VECTOR_ADD, SCALE_BY]


def test_list_ignores_annotations() -> None:
    # An annotation that names a parameter wrongly is an error, so a list that resolves
    # the same source shows the list really infers.
    src = KERNELS.replace("attr.scale_factor:float32", "attr.s")
    assert resolve(["scale_by"], src)[0].attrs[0].name == "scale_factor"
    with pytest.raises(SpecError, match=r"token 3 'attr\.s' names attribute 's'"):
        resolve(None, src)


def test_attr_token_binds_by_name() -> None:
    (spec,) = resolve({"scale_by": ["arg", "ret", "attr.scale_factor", "stream"]})
    assert spec.params[2] == Param(Role.ATTR, "scale_factor", "float32", "float")


def test_inferred_spec_for_unannotated_function() -> None:
    src = KERNELS + "\n// @BE plain\nvoid plain(BE::Tensor const x, BE::Tensor y, double k) {}\n"
    spec = resolve(None, src)[2]
    assert spec.tokens() == ["arg", "ret", "attr.k:float64"]


def test_stream_kinds() -> None:
    src = """
    void a(BE::Tensor o, cudaStream_t s) {}
    void b(BE::Tensor o, void* s) {}
    void c(BE::Tensor o, uint64_t s) {}
    """
    for name in "abc":
        (spec,) = resolve({name: "ret stream"}, src)
        assert spec.params[1].role is Role.STREAM


def test_several_sources() -> None:
    a = ("a.cu", "// @BE f arg ret\nvoid f(const BE::Tensor x, BE::Tensor o) {}\n")
    b = ("b.cpp", "void g(BE::Tensor y);\n// @BE g\nvoid g(BE::Tensor y) {}\n")
    specs = resolve_functions(None, [a, b])
    assert [(s.name, s.source_file, s.line) for s in specs] == [("f", "a.cu", 2), ("g", "b.cpp", 3)]


def test_declaration_in_one_source_definition_in_another() -> None:
    decl = ("main.cpp", "void f(const BE::Tensor x, BE::Tensor y);\n")
    defn = ("k.cu", "\nvoid f(const BE::Tensor x, BE::Tensor y) {}\n")
    (spec,) = resolve_functions(["f"], [decl, defn])
    assert (spec.source_file, spec.line) == ("k.cu", 2)


# -- errors: functions= and sources --------------------------------------------------


@pytest.mark.parametrize("bad", [3, "vector_add", {"vector_add"}, b"x"])
def test_bad_functions_type(bad: object) -> None:
    err = error(bad, KERNELS, "functions= must be", "dict", "list/tuple", "None")
    assert err.functions_type == type(bad).__name__


@pytest.mark.parametrize("empty", [{}, [], ()])
def test_empty_functions(empty: object) -> None:
    error(empty, KERNELS, "No functions to expose", "functions=", "// @BE")


def test_no_annotations() -> None:
    error(None, "void f(BE::Tensor x) {}", "No functions to expose", "kernels.cu", "// @BE")


@pytest.mark.parametrize(
    "name", ["a/b", "..", "../x", "a b", "a;b", "a-b", "", "1abc", "int", "f()", 3, None]
)
def test_bad_function_names(name: object) -> None:
    err = error({name: None}, KERNELS, repr(name), "not a valid C identifier")
    assert err.function == name
    error([name], KERNELS, repr(name))


def test_duplicate_names_in_list() -> None:
    error(["vector_add", "vector_add"], KERNELS, "'vector_add' twice")


@pytest.mark.parametrize(
    "sources",
    ["void f();", [("a.cu",)], [("a.cu", b"x")], [(1, "x")], 5, [], ["void f();"]],
)
def test_bad_sources(sources: object) -> None:
    with pytest.raises(SpecError, match=r"sources|No C\+\+ sources"):
        resolve_functions(["f"], sources)  # type: ignore[arg-type]


def test_bad_tokens_are_reported_against_the_function() -> None:
    err = error({"vector_add": ["arg", "agr", "ret", "stream"]}, KERNELS, "vector_add", "'agr'")
    assert err.position == 2


# -- errors: lookup ---------------------------------------------------------------


def test_not_found_with_typo_hint() -> None:
    err = error(["vector_ad"], KERNELS, "vector_ad:", "kernels.cu", "Did you mean 'vector_add'?")
    assert err.files == ["kernels.cu"]


def test_not_found_lists_all_files() -> None:
    with pytest.raises(SpecError) as info:
        resolve_functions(["zzz"], [("a.cu", "void f();"), ("b.cu", "void g();")])
    assert "a.cu, b.cu" in str(info.value)
    assert "Did you mean" not in str(info.value)


def test_kernel_name_is_explained() -> None:
    err = error(["add_kernel"], KERNELS, "add_kernel", "__global__ kernel", "kernels.cu:5")
    assert err.line == 5


def test_found_in_several_sources() -> None:
    a = ("a.cu", "void f(BE::Tensor x) {}")
    b = ("b.cu", "void f(BE::Tensor x) {}")
    with pytest.raises(SpecError) as info:
        resolve_functions(["f"], [a, b])
    assert "f:" in str(info.value)
    assert "a.cu:1" in str(info.value) and "b.cu:1" in str(info.value)


def test_declarations_only_in_several_sources() -> None:
    a = ("a.cu", "void f(BE::Tensor x);")
    b = ("b.cu", "void f(BE::Tensor x);")
    with pytest.raises(SpecError, match="found in several sources"):
        resolve_functions(["f"], [a, b])


def test_annotated_in_two_sources() -> None:
    a = ("a.cu", "// @BE f\nvoid f(BE::Tensor x) {}")
    b = ("b.cu", "// @BE f arg\n")
    with pytest.raises(SpecError, match=r"annotated in two places, a\.cu:1 and b\.cu:1"):
        resolve_functions(None, [a, b])


def test_overloads_in_one_source() -> None:
    src = "void f(BE::Tensor x) {}\nvoid f(BE::Tensor x, float k) {}\n"
    error(["f"], src, "overloads", "kernels.cu:1", "kernels.cu:2")


# -- errors: tokens against the signature ------------------------------------------


def test_arity_mismatch() -> None:
    err = error(
        {"vector_add": "arg arg ret"},
        KERNELS,
        "vector_add (kernels.cu:11)",
        "3 token(s)",
        "4 parameter(s)",
        "int64_t stream",
        "one token per parameter",
    )
    assert (err.expected, err.got) == (4, 3)


def test_order_mismatch_attr_on_tensor() -> None:
    err = error(
        {"scale_by": "attr.scale_factor arg ret stream"},
        KERNELS,
        "scale_by",
        "token 1 'attr.scale_factor'",
        "parameter 1 `const BE::Tensor x`",
        "a scalar parameter",
        "use arg for this tensor",
    )
    assert (err.position, err.parameter) == (1, "x")


def test_order_mismatch_tensor_on_scalar() -> None:
    err = error(
        {"scale_by": "arg ret arg stream"},
        KERNELS,
        "token 3 'arg'",
        "`float scale_factor`",
        "a BE::Tensor parameter",
        "'attr.scale_factor:float32'",
    )
    assert err.cxx_type == "float"


def test_stream_on_a_float() -> None:
    error(
        {"scale_by": "arg ret stream attr.x"},
        KERNELS,
        "token 3 'stream'",
        "`float scale_factor`",
        "int64_t, cudaStream_t or void*",
    )


def test_attr_on_a_stream_type() -> None:
    src = "void f(BE::Tensor o, cudaStream_t s) {}"
    error({"f": "ret attr.s"}, src, "token 2 'attr.s'", "cudaStream_t s", "use 'stream'")


def test_attr_type_mismatch_names_both_types() -> None:
    err = error(
        {"scale_by": "arg ret attr.scale_factor:float64 stream"},
        KERNELS,
        "token 3 'attr.scale_factor:float64'",
        "float64",
        "float32",
        "attr.scale_factor:float32",
    )
    assert err.parameter == "scale_factor"


def test_attr_alias_type_matches() -> None:
    (spec,) = resolve({"scale_by": "arg ret attr.scale_factor:f32 stream"})
    assert spec.params[2].dtype == "float32"


def test_ret_on_const_tensor() -> None:
    err = error(
        {"vector_add": "arg ret ret stream"},
        KERNELS,
        "token 2 'ret'",
        "`const BE::Tensor b`",
        "writable",
        "drop const",
    )
    assert err.position == 2


def test_arg_on_mutable_tensor_is_allowed() -> None:
    (spec,) = resolve({"f": "arg ret"}, "void f(BE::Tensor x, BE::Tensor y) {}")
    assert spec.params[0].role is Role.ARG


def test_unmappable_parameter_with_explicit_tokens() -> None:
    src = "void f(const float* x, BE::Tensor y) {}"
    error({"f": "arg ret"}, src, "token 1 'arg'", "const float* x", "pointers", "accepted:")


def test_unmappable_parameter_when_inferring() -> None:
    src = "// @BE f\nvoid f(std::vector<float> v, BE::Tensor y) {}"
    error(None, src, "cannot infer", "std::vector<float> v", "explicit spec")


def test_annotation_origin_is_in_the_message() -> None:
    src = "// @BE f arg ret\nvoid f(const BE::Tensor x) {}"
    error(None, src, "arg_spec from '@BE' at kernels.cu:1", "2 token(s)")


def test_errors_pickle() -> None:
    err = error({"vector_add": "arg ret ret stream"})
    back = pickle.loads(pickle.dumps(err))
    assert str(back) == str(err)
    assert back.position == 2
