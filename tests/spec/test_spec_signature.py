"""Signature lookup, parameter parsing, type classification and spec inference."""

from __future__ import annotations

import contextlib

import pytest

from brainevent.errors import SpecError
from brainevent.spec.bind import infer_spec
from brainevent.spec.cxx_types import classify
from brainevent.spec.model import Role
from brainevent.spec.signature import CxxSignature, pick_one, scan_functions
from brainevent.spec.tokens import SpecToken
from tests.support.kernels import CUDA_VECTOR_ADD as SEED
from tests.support.properties import given, settings, st


def find_signature(source: str, function: str, file_name: str = "<source>") -> CxxSignature | None:
    return pick_one(function, scan_functions(source, file_name))


def sig_of(source: str, name: str = "f") -> CxxSignature:
    sig = find_signature(source, name, "k.cu")
    assert sig is not None, f"{name} not found"
    return sig


def param_table(sig: CxxSignature) -> list[tuple[str, str]]:
    return [(p.name, p.type) for p in sig.params]


def test_seed_example() -> None:
    sig = sig_of(SEED, "vector_add")
    assert sig.name == "vector_add"
    assert sig.return_type == "void"
    assert sig.line == 11
    assert sig.file_name == "k.cu"
    assert sig.is_definition
    assert param_table(sig) == [
        ("a", "const BE::Tensor"),
        ("b", "const BE::Tensor"),
        ("out", "BE::Tensor"),
        ("stream", "int64_t"),
    ]
    assert [p.line for p in sig.params] == [11, 11, 12, 12]
    assert [t.canonical for t in infer_spec(sig)] == ["arg", "arg", "ret", "stream"]


def test_kernel_is_not_the_entry_point() -> None:
    assert find_signature(SEED, "add_kernel") is None
    kinds = {s.name: s.kind for s in scan_functions(SEED)}
    assert kinds == {"add_kernel": "kernel", "vector_add": "host"}


def test_missing_function() -> None:
    assert find_signature(SEED, "vector_ad") is None
    assert find_signature("", "f") is None


def test_comments_inside_params() -> None:
    src = """
    void f(const BE::Tensor /* in */ a, // the input
           BE::Tensor /* out, not a param */ b /* trailing */,
           /* leading */ float k) {}
    """
    sig = sig_of(src)
    assert param_table(sig) == [("a", "const BE::Tensor"), ("b", "BE::Tensor"), ("k", "float")]
    assert [p.line for p in sig.params] == [2, 3, 4]


@pytest.mark.parametrize(
    ("spelling", "detail"),
    [
        ("const BE::Tensor", "const"),
        ("BE::Tensor const", "const"),
        ("const BE::Tensor&", "const"),
        ("const BE::Tensor &", "const"),
        ("BE::Tensor const &", "const"),
        ("const ::BE::Tensor", "const"),
        ("::BE::Tensor const&", "const"),
        ("BE :: Tensor const", "const"),
        ("BE::Tensor", "mutable"),
        ("BE::Tensor&", "mutable"),
        ("BE::Tensor &", "mutable"),
        ("::BE::Tensor", "mutable"),
    ],
)
def test_tensor_spellings(spelling: str, detail: str) -> None:
    sig = sig_of(f"void f({spelling} x);")
    assert sig.params[0].name == "x"
    assert classify(sig.params[0]) == ("tensor", detail)
    expected = Role.ARG if detail == "const" else Role.RET
    assert infer_spec(sig) == [SpecToken(expected)]


SCALARS = [
    ("bool", "bool"),
    ("int8_t", "int8"),
    ("std::int8_t", "int8"),
    ("signed char", "int8"),
    ("int16_t", "int16"),
    ("short", "int16"),
    ("short int", "int16"),
    ("signed short", "int16"),
    ("unsigned short int", "uint16"),
    ("int32_t", "int32"),
    ("::int32_t", "int32"),
    ("int", "int32"),
    ("signed", "int32"),
    ("signed int", "int32"),
    ("int64_t", "int64"),
    ("std::int64_t", "int64"),
    ("::std::int64_t", "int64"),
    ("long", "int64"),
    ("long int", "int64"),
    ("long long", "int64"),
    ("long long int", "int64"),
    ("long signed int", "int64"),
    ("ptrdiff_t", "int64"),
    ("std::ptrdiff_t", "int64"),
    ("ssize_t", "int64"),
    ("intptr_t", "int64"),
    ("uint8_t", "uint8"),
    ("unsigned char", "uint8"),
    ("uint16_t", "uint16"),
    ("unsigned short", "uint16"),
    ("uint32_t", "uint32"),
    ("std::uint32_t", "uint32"),
    ("unsigned", "uint32"),
    ("unsigned int", "uint32"),
    ("uint64_t", "uint64"),
    ("unsigned long", "uint64"),
    ("unsigned long long", "uint64"),
    ("long unsigned long", "uint64"),
    ("size_t", "uint64"),
    ("std::size_t", "uint64"),
    ("uintptr_t", "uint64"),
    ("half", "float16"),
    ("__half", "float16"),
    ("BE::float16", "float16"),
    ("__nv_bfloat16", "bfloat16"),
    ("nv_bfloat16", "bfloat16"),
    ("BE::bfloat16", "bfloat16"),
    ("float", "float32"),
    ("double", "float64"),
    ("std::complex<float>", "complex64"),
    ("complex<float>", "complex64"),
    ("std :: complex < float >", "complex64"),
    ("BE::complex64", "complex64"),
    ("std::complex<double>", "complex128"),
    ("BE::complex128", "complex128"),
    ("const float", "float32"),
    ("float const", "float32"),
    ("const float&", "float32"),
    ("const double &", "float64"),
    ("std::int64_t const&", "int64"),
]


@pytest.mark.parametrize(("spelling", "dtype"), SCALARS)
def test_scalar_spellings(spelling: str, dtype: str) -> None:
    sig = sig_of(f"void f({spelling} k) {{ }}")
    assert classify(sig.params[0]) == ("scalar", dtype)
    assert classify(spelling) == ("scalar", dtype)
    assert infer_spec(sig) == [SpecToken(Role.ATTR, "k", dtype)]


@pytest.mark.parametrize("spelling", ["cudaStream_t", "const cudaStream_t", "void*", "void *"])
def test_stream_types(spelling: str) -> None:
    sig = sig_of(f"void f({spelling} s);")
    assert classify(sig.params[0]).kind == "stream"
    assert infer_spec(sig) == [SpecToken(Role.STREAM)]


@pytest.mark.parametrize(
    ("spelling", "reason"),
    [
        ("float*", "pointers"),
        ("const float*", "pointers"),
        ("BE::Tensor*", "pointers"),
        ("std::vector<float>", "no matching"),
        ("MyType", "no matching"),
        ("Tensor", "spell it BE::Tensor"),
        ("const at::Tensor&", "spell it BE::Tensor"),
        ("char", "plain char"),
        ("long double", "long double"),
        ("float&", "non-const reference"),
        ("BE::Tensor&&", "rvalue"),
        ("volatile int", "volatile"),
        ("short long", "no matching"),
        ("signed unsigned", "no matching"),
        ("long long long", "no matching"),
        ("cudaStream_t&", "by value"),
        ("void**", "pointers"),
    ],
)
def test_unmappable_types(spelling: str, reason: str) -> None:
    sig = sig_of(f"void f({spelling} p);")
    kind, detail = classify(sig.params[0])
    assert kind == "unmappable"
    assert reason in detail
    with pytest.raises(SpecError) as info:
        infer_spec(sig)
    message = str(info.value)
    for needle in ("f (k.cu:1)", "`", "p", repr(sig.params[0].type), "Accepted", "explicit spec"):
        assert needle in message
    assert info.value.parameter == "p"
    assert info.value.cxx_type == sig.params[0].type


def test_array_and_function_pointer_params() -> None:
    sig = sig_of("void f(float arr[4], void (*cb)(int), std::function<void(int)> fn);")
    assert [p.name for p in sig.params] == ["arr", "cb", "fn"]
    assert [classify(p).kind for p in sig.params] == ["unmappable"] * 3
    assert "arrays" in classify(sig.params[0]).detail


def test_unsigned_long_long_and_std_int64_in_one_signature() -> None:
    src = "void f(unsigned long long count, std::int64_t offset, long long n) {}"
    assert [t.canonical for t in infer_spec(sig_of(src))] == [
        "attr.count:uint64",
        "attr.offset:int64",
        "attr.n:int64",
    ]


def test_extern_c_static_inline_and_attributes() -> None:
    for prefix in [
        'extern "C"',
        "static",
        "inline",
        "static inline",
        "[[maybe_unused]] static",
        '__attribute__((visibility("default")))',
        "EXPORT_MACRO(x)",
    ]:
        sig = sig_of(f"{prefix} void f(const BE::Tensor a, BE::Tensor b) {{}}")
        assert sig.return_type == "void", prefix
        assert len(sig.params) == 2


def test_extern_c_block_and_namespaces_are_namespace_scope() -> None:
    src = """
    namespace outer { namespace inner {
    extern "C" {
    void f(const BE::Tensor a, BE::Tensor b, int64_t stream);
    }
    } }
    inline namespace v1 { void g(BE::Tensor out) {} }
    namespace a::b { void h(BE::Tensor out) {} }
    """
    f = sig_of(src)
    assert (f.line, f.scope, f.is_definition) == (4, "outer::inner", False)
    g = sig_of(src, "g")
    assert [p.name for p in g.params] == ["out"] and g.scope == "v1" and g.line == 7
    h = sig_of(src, "h")
    assert (h.return_type, h.line, h.scope) == ("void", 8, "a::b")
    assert [(p.type, p.name) for p in h.params] == [("BE::Tensor", "out")]


def test_templates_before_the_function() -> None:
    src = """
    template <typename T, int N = (3 > 2)>
    __global__ void f_kernel(const T* x, T* y, std::map<int, float> m) { y[0] = x[0]; }

    template <typename T>
    struct Box { T v; void f(int x) {} };

    template <typename T> T twice(T v) { return v + v; }

    void f(const BE::Tensor x, BE::Tensor y, int64_t stream) {
        f_kernel<float, 4><<<1, 1, 0, (cudaStream_t)stream>>>(nullptr, nullptr, {});
        twice<int>(3);
    }
    """
    sig = sig_of(src)
    assert sig.line == 10
    assert [p.name for p in sig.params] == ["x", "y", "stream"]
    kernel = next(s for s in scan_functions(src) if s.name == "f_kernel")
    assert kernel.kind == "kernel"
    assert kernel.is_template
    assert [p.name for p in kernel.params] == ["x", "y", "m"]


def test_function_template_is_rejected() -> None:
    src = "template <typename T> void f(const BE::Tensor x, BE::Tensor y) {}"
    with pytest.raises(SpecError, match=r"f: at k\.cu:1 it is a function template"):
        find_signature(src, "f", "k.cu")


def test_global_and_device_functions_with_the_same_name_are_skipped() -> None:
    src = """
    __global__ void f(const float* x) {}
    __device__ float f(float v) { return v; }
    __host__ __device__ inline float g(float v) { return v; }
    void f(const BE::Tensor x, BE::Tensor y) {}
    """
    sig = sig_of(src)
    assert sig.line == 5
    assert sig_of(src, "g").kind == "host"
    assert [s.kind for s in scan_functions(src) if s.name == "f"] == ["kernel", "device", "host"]


def test_call_sites_are_not_definitions() -> None:
    src = """
    void helper(BE::Tensor out) {
        f(out, out, 3);
        if (x) { f(a, b); }
        auto lambda = [&]() { f(1); };
    }
    static int registered = f(1, 2);
    int value = 3 * f(4);
    void f(const BE::Tensor a, BE::Tensor b, int64_t stream) {
        f(a, b, stream);  // recursion
    }
    """
    sig = sig_of(src)
    assert sig.line == 9
    assert len(sig.params) == 3


def test_class_members_are_not_entry_points() -> None:
    src = """
    struct S {
        void f(const BE::Tensor a);
        static void g(BE::Tensor a) {}
    };
    class C { public: void f(BE::Tensor) {} };
    """
    assert find_signature(src, "f") is None
    assert find_signature(src, "g") is None


def test_braces_in_strings_raw_strings_comments_and_directives() -> None:
    src = r"""
    #define OPEN {
    #define MULTI { \
        {
    const char* s = "}}} void f(int x) {";
    const char* r = R"delim(
    } } void f(BE::Tensor bad); {
    )delim";
    char c = '}';
    /* } void f(float nope); */
    // } void f(double nope);
    void f(const BE::Tensor ok) {}
    """
    sig = sig_of(src)
    assert param_table(sig) == [("ok", "const BE::Tensor")]
    assert sig.line == 12


def test_declaration_then_definition_is_one_function() -> None:
    src = """
    void f(const BE::Tensor, BE::Tensor);
    void f(BE::Tensor const a, BE::Tensor b) {}
    """
    sig = sig_of(src)
    assert sig.is_definition
    assert sig.line == 3
    assert [p.name for p in sig.params] == ["a", "b"]


def test_declaration_only() -> None:
    sig = sig_of('extern "C" void f(const BE::Tensor a, BE::Tensor b);')
    assert not sig.is_definition


def test_overloads_are_an_error() -> None:
    src = "void f(BE::Tensor a) {}\n\nvoid f(BE::Tensor a, float k) {}\n"
    with pytest.raises(SpecError) as info:
        find_signature(src, "f", "k.cu")
    assert "overloads" in str(info.value)
    assert "k.cu:1" in str(info.value) and "k.cu:3" in str(info.value)
    assert info.value.lines == [1, 3]


def test_two_definitions_are_an_error() -> None:
    src = "void f(BE::Tensor a) {}\nvoid f(BE::Tensor b) {}\n"
    with pytest.raises(SpecError, match=r"defined more than once, at k\.cu:1, k\.cu:2"):
        find_signature(src, "f", "k.cu")


def test_multi_line_params_defaults_unnamed_and_void() -> None:
    src = """
    int f(
        const BE::Tensor a,
        BE::Tensor
            b,
        float scale = 1.0f,
        std::map<int, float> m = {},
        int
    );
    void g(void) {}
    void h() {}
    """
    sig = sig_of(src)
    assert sig.return_type == "int"
    assert param_table(sig) == [
        ("a", "const BE::Tensor"),
        ("b", "BE::Tensor"),
        ("scale", "float"),
        ("m", "std::map<int, float>"),
        ("", "int"),
    ]
    assert [p.line for p in sig.params] == [3, 5, 6, 7, 8]
    assert sig_of(src, "g").params == ()
    assert sig_of(src, "h").params == ()


def test_return_types() -> None:
    src = """
    static inline std::vector<int> f(BE::Tensor x);
    const char* g(BE::Tensor x);
    [[nodiscard]] ::std::int64_t h(BE::Tensor x);
    """
    assert sig_of(src).return_type == "std::vector<int>"
    assert sig_of(src, "g").return_type == "const char*"
    assert sig_of(src, "h").return_type == "::std::int64_t"


def test_variables_and_typedefs_are_not_functions() -> None:
    src = """
    typedef void f(BE::Tensor a);
    using g = void(BE::Tensor);
    int h = compute(1), k(2);
    """
    assert scan_functions(src) == []


def test_unbalanced_source_does_not_raise() -> None:
    for src in ["void f(BE::Tensor a", "void f(BE::Tensor a) {", "}}} void f(int a);", "( ] {"]:
        scan_functions(src)


# -- inference ----------------------------------------------------------------


def test_infer_stream_by_name_and_type() -> None:
    for decl in ["int64_t stream", "long long cuStream", "std::int64_t STREAM", "void* s"]:
        sig = sig_of(f"void f(BE::Tensor o, {decl});")
        assert infer_spec(sig)[1] == SpecToken(Role.STREAM), decl


def test_infer_int64_not_named_stream_is_an_attr() -> None:
    sig = sig_of("void f(BE::Tensor o, int64_t streams_count, int32_t stream);")
    assert [t.canonical for t in infer_spec(sig)] == [
        "ret",
        "attr.streams_count:int64",
        "attr.stream:int32",
    ]


def test_infer_two_streams_is_an_error() -> None:
    sig = sig_of("void f(int64_t stream, cudaStream_t s);")
    with pytest.raises(SpecError, match="second stream parameter"):
        infer_spec(sig)


def test_infer_unnamed_scalar_is_an_error() -> None:
    sig = sig_of("void f(BE::Tensor o, float);")
    with pytest.raises(SpecError, match="unnamed scalar"):
        infer_spec(sig)


def test_infer_seed_scale_by() -> None:
    src = "void scale_by(const BE::Tensor x, BE::Tensor out, float scale_factor, int64_t stream);"
    assert [t.canonical for t in infer_spec(sig_of(src, "scale_by"))] == [
        "arg",
        "ret",
        "attr.scale_factor:float32",
        "stream",
    ]


# -- property-based -------------------------------------------------------------

_pieces = st.sampled_from(
    [
        "void",
        " f",
        "f",
        "(",
        ")",
        "{",
        "}",
        ";",
        ",",
        "BE::Tensor",
        "const",
        "&",
        "*",
        "int64_t",
        " x",
        " stream",
        "template<typename T>",
        "<",
        ">",
        "__global__",
        'extern "C"',
        "namespace n",
        "// c\n",
        "/* c */",
        '"}"',
        "\n",
        "#define X {\n",
        "=",
        "[[",
        "]]",
        "::",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=200), st.lists(_pieces, max_size=40).map(" ".join)))
def test_find_signature_only_raises_spec_error(source: str) -> None:
    try:
        sig = find_signature(source, "f")
    except SpecError as err:
        assert "f" in str(err)
        return
    if sig is not None:
        with contextlib.suppress(SpecError):
            infer_spec(sig)


_TENSOR_ARG = ["const BE::Tensor", "BE::Tensor const", "const BE::Tensor&", "const ::BE::Tensor"]
_TENSOR_RET = ["BE::Tensor", "BE::Tensor&", "::BE::Tensor &"]
_STREAMS = ["int64_t", "std::int64_t", "long long", "cudaStream_t", "void*"]


@st.composite
def signatures(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A random valid entry point and the canonical spec it must infer to."""
    n = draw(st.integers(0, 7))
    stream_at = draw(st.integers(-1, n - 1)) if n else -1
    sep = draw(st.sampled_from([" ", "\n    ", " /* c, d */ ", " // note\n  "]))
    decls: list[str] = []
    expected: list[str] = []
    for k in range(n):
        if k == stream_at:
            decls.append(f"{draw(st.sampled_from(_STREAMS))} stream")
            expected.append("stream")
            continue
        kind = draw(st.sampled_from(["arg", "ret", "attr"]))
        if kind == "arg":
            decls.append(f"{draw(st.sampled_from(_TENSOR_ARG))} t{k}")
        elif kind == "ret":
            decls.append(f"{draw(st.sampled_from(_TENSOR_RET))} t{k}")
        else:
            spelling, dtype = draw(st.sampled_from(SCALARS))
            decls.append(f"{spelling} a{k}")
            kind = f"attr.a{k}:{dtype}"
        expected.append(kind)
    body = draw(st.sampled_from(["{}", ";", "{ f(1, 2); { } }"]))
    before = draw(st.sampled_from(["", "__global__ void f(float* p) {}\n", "int f_helper(int);\n"]))
    src = f"{before}void f({(',' + sep).join(decls)}) {body}\nvoid g() {{ f(); }}\n"
    return src, expected


@settings(max_examples=200, deadline=None)
@given(signatures())
def test_generated_signatures_round_trip_through_inference(case: tuple[str, list[str]]) -> None:
    src, expected = case
    sig = sig_of(src)
    assert [t.canonical for t in infer_spec(sig)] == expected
