"""Result shapes at the edges: XLA sizes an array, in elements and in bytes, with a signed
64-bit integer, and a larger size aborts the whole process (no Python error). So a declared
literal shape past that is a SpecError when the spec is read, and every result shape a call
makes (from attributes, ``outs=``, ``scratch_bytes=``) is a KernelCallError before XLA sees
it, whatever the kernel kind (docs/arg-spec.md, "Limits of a shape")."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from brainevent.errors import SpecError

SRC = Path(__file__).resolve().parents[2] / "src"
LIMIT = 2**63 - 1


@pytest.mark.unit
@pytest.mark.parametrize(
    ("token", "words"),
    [
        # 2**64 elements: XLA's extent product overflows (SIGABRT before this check)
        ("ret:(4294967296,4294967296):float32", ["2**66 bytes", "at most 2**63-1"]),
        # elements fit (2**62) but bytes (2**64) do not: the same abort
        ("ret:(2147483648,2147483648):float32", ["2**64 bytes"]),
        # a dim past int64 was accepted and narrowed in the binding
        ("ret:(99999999999999999999,1):float32", ["dim 99999999999999999999", "at most 2**63-1"]),
        ("ret:(n,9223372036854775808):int8", ["dim 9223372036854775808"]),
        ("scratch:9223372036854775808", ["9223372036854775808 bytes", "at most 2**63-1"]),
    ],
)
def test_literal_sizes_past_int64_are_spec_errors(token: str, words: list[str]) -> None:
    from brainevent.spec.tokens import parse_tokens

    with pytest.raises(SpecError) as info:
        parse_tokens("f", ["arg", token, "attr.n:int64"])
    for word in [token, *words]:
        assert word in str(info.value), (word, str(info.value))


@pytest.mark.unit
@pytest.mark.parametrize(
    "token",
    [
        f"ret:({LIMIT // 4}):float32",  # 2**63-4 bytes: the largest float32 vector XLA can size
        f"ret:({LIMIT}):uint8",
        f"ret:(n,{LIMIT}):bool",  # an attribute of 0 or 1 keeps it in range
        f"scratch:{LIMIT}",
        "ret:(0,4294967296,4294967296):float32",  # no element at all
    ],
)
def test_the_largest_sizes_are_accepted(token: str) -> None:
    from brainevent.spec.tokens import parse_tokens

    parse_tokens("f", ["arg", token, "attr.n:int64"])


def test_a_loader_refuses_the_declaration_before_compiling() -> None:
    import brainevent

    source = r"""
    #include "brainevent/common.h"
    // @BE big arg ret:(4294967296,4294967296):float32
    void big(const BE::Tensor x, BE::Tensor out) {}
    """
    with pytest.raises(SpecError, match=r"ret:\(4294967296,4294967296\):float32.*2\*\*66 bytes"):
        brainevent.load_cpp_inline(name="result_sizes_literal", cpp_sources=source)


# Every surface that makes a result shape, each with one that XLA cannot size. Before the
# check these aborted the process (SIGABRT: "overflow in static extent product") or raised
# a raw MLIRError (a negative dim).
SCRIPT = textwrap.dedent(
    r"""
    import json, sys
    import jax, jax.numpy as jnp, numpy as np
    import brainevent
    from brainevent.errors import KernelCallError

    mod = brainevent.load_cpp_inline(name="result_sizes", cpp_sources=r'''
    #include "brainevent/common.h"
    // @BE square arg ret:(n,n):float32 attr.n:int64
    void square(const BE::Tensor x, BE::Tensor out, int64_t n) {}
    // @BE plain arg ret
    void plain(const BE::Tensor x, BE::Tensor out) {}
    // @BE scratchy arg ret scratch
    void scratchy(const BE::Tensor x, BE::Tensor out, BE::Scratch s) {}
    ''')
    x = np.ones(4, np.float32)
    huge = jax.ShapeDtypeStruct((2**32, 2**32), np.float32)

    def numba_kernel():
        import numba
        @numba.njit
        def copy(x, out):
            pass
        return brainevent.numba_kernel(copy, huge)(x)

    def xla_custom_kernel():
        op = brainevent.XLACustomKernel("result_sizes_op").def_kernel("cpu", mod.plain)
        return op(x, outs=huge)

    def cuda_kernel():
        source = 'extern "C" __global__ void k(const float* x, float* out) {}'
        return brainevent.cuda_kernel(source, "k", huge, launch_dims=1, compute_capability="sm_80")(x)

    cases = {
        "attr_elements": lambda: mod.square(x, n=2**32),
        "attr_bytes": lambda: mod.square(x, n=2**31),
        "attr_negative": lambda: mod.square(x, n=-1),
        "attr_under_jit": lambda: jax.jit(lambda v: mod.square(v, n=2**32))(x),
        "outs": lambda: mod.plain(x, outs=huge),
        "outs_negative": lambda: mod.plain(x, outs=jax.ShapeDtypeStruct((-1, 3), np.float32)),
        "scratch_bytes": lambda: mod.scratchy(x, scratch_bytes=2**63),
        "ffi_call": lambda: brainevent.ffi_call("result_sizes.plain", huge)(x),
        "numba_kernel": numba_kernel,
        "xla_custom_kernel": xla_custom_kernel,
        "cuda_kernel": cuda_kernel,
    }
    found = {}
    for name, case in cases.items():
        try:
            case()
            found[name] = "no error"
        except KernelCallError as exc:
            found[name] = "KernelCallError: " + str(exc)
        except Exception as exc:
            found[name] = f"{type(exc).__name__}: {exc}"
        print(name, found[name][:200], file=sys.stderr, flush=True)
    # The process is intact and a good size still runs.
    found["after"] = str(np.asarray(mod.square(x, n=3)).shape)
    print(json.dumps(found))
    """
)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    env["JAX_PLATFORMS"] = "cpu"
    env["JAX_ENABLE_X64"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, f"the process died (rc {done.returncode}): {done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("case", "words"),
    [
        (
            "attr_elements",
            ["result_sizes.square", "(4294967296, 4294967296)", "2**66 bytes", "at most 2**63-1 bytes"],
        ),
        ("attr_bytes", ["(2147483648, 2147483648)", "2**64 bytes", "at most 2**63-1 bytes"]),
        ("attr_negative", ["result_sizes.square", "(-1, -1)", "dim -1 is negative"]),
        ("attr_under_jit", ["2**66 bytes", "at most 2**63-1 bytes"]),
        ("outs", ["result_sizes.plain", "2**66 bytes", "at most 2**63-1 bytes"]),
        ("outs_negative", ["(-1, 3)", "dim -1 is negative"]),
        ("scratch_bytes", ["(9223372036854775808,)", "dim 9223372036854775808 is larger", "at most 2**63-1"]),
        ("ffi_call", ["result_sizes.plain", "2**66 bytes", "at most 2**63-1 bytes"]),
        ("numba_kernel", ["copy", "2**66 bytes", "at most 2**63-1 bytes"]),
        ("xla_custom_kernel", ["result_sizes_op", "2**66 bytes", "at most 2**63-1 bytes"]),
        ("cuda_kernel", ["2**66 bytes", "at most 2**63-1 bytes"]),
    ],
)
def test_a_result_xla_cannot_size_is_a_typed_error(
    outcomes: dict[str, str], case: str, words: list[str]
) -> None:
    got = outcomes[case]
    if case == "numba_kernel" and got.startswith("ModuleNotFoundError"):
        pytest.skip("numba is not installed")
    assert got.startswith("KernelCallError: "), got
    for word in words:
        assert word in got, (word, got)
    assert outcomes["after"] == "(3, 3)"


@pytest.mark.unit
@pytest.mark.skipif(
    not (SRC / "brainevent").is_dir(), reason="not applicable: no src/brainevent, not a source checkout"
)
def test_shapes_reach_xla_only_through_the_checked_helpers() -> None:
    """The check sits where results are typed for XLA (calls/ffi.py); a second way to issue an
    FFI call, or a primitive typing its results without abstract_results, would bypass it."""
    package = SRC / "brainevent"
    ffi_calls: list[str] = []
    abstract_evals: dict[str, str] = {}
    for path in sorted(package.rglob("*.py")):
        where = str(path.relative_to(package))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            if node.func.attr == "ffi_call" and ast.unparse(node.func.value) == "jax.ffi":
                ffi_calls.append(where)
            elif node.func.attr == "def_abstract_eval":
                abstract_evals[where] = ast.unparse(node.args[0])
    assert ffi_calls == ["calls/ffi.py"], ffi_calls
    assert sorted(abstract_evals) == [
        "calls/autodiff.py",
        "calls/batching.py",
        "custom_kernel/primitive.py",
    ], abstract_evals
    for where, rule in abstract_evals.items():
        assert rule.startswith("lambda") and "abstract_results(" in rule, (where, rule)
