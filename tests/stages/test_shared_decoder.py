"""The shared call-frame decoder: compiled by the first build of a cache, reused by every
later one, so a single-file module then builds in one compiler call that also links."""

from __future__ import annotations

import subprocess
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import brainevent
from brainevent.platforms import create
from brainevent.platforms.steps import decoder_salt
from brainevent.stages.decoder import DECODER_DIR
from brainevent.stages.load import load as load_request
from brainevent.stages.request import file_unit, make_request

KERNEL = """
#include "brainevent/common.h"
// @BE twice arg ret
void twice(const BE::Tensor x, BE::Tensor out) {
  for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = 2.0f * x.data_ptr<float>()[i] + OFFSET;
}
"""


@pytest.fixture
def counting_cxx(tmp_path: Path, fresh_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """BRAINEVENT_CXX is g++ behind a script that logs every command line it runs."""
    log = tmp_path / "cxx.log"
    wrapper = tmp_path / "bin" / "logging-g++"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec g++ "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("BRAINEVENT_CXX", str(wrapper))
    return log


def _runs(log: Path) -> list[str]:
    """The compiler runs that compiled or linked something (not the -v include probe)."""
    lines = log.read_text().splitlines() if log.exists() else []
    return [line for line in lines if " -o " in f" {line} "]


def _load(offset: str, **kwargs: object) -> brainevent.CompiledModule:
    return brainevent.load_cpp_inline(
        name="decoder_use", cpp_sources=KERNEL, extra_cflags=[f"-DOFFSET={offset}"], **kwargs
    )


def _check(mod: brainevent.CompiledModule, offset: float) -> None:
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(mod.twice(jnp.asarray(x))), 2 * x + offset)


def test_first_build_publishes_the_decoder_and_later_builds_are_one_call(
    counting_cxx: Path, fresh_cache: Path
) -> None:
    first = _load("1.0f")
    assert first.built_now
    _check(first, 1.0)
    runs = _runs(counting_cxx)
    # Unit and decoder compiled apart (in parallel), then one link.
    assert sum("decoder.cpp" in r for r in runs) == 1 and len(runs) == 3, runs
    decoders = list((fresh_cache / "v1" / DECODER_DIR / "objects").glob("*.o"))
    assert len(decoders) == 1, decoders

    counting_cxx.unlink()
    second = _load("3.0f")  # another build (a new flag) in the same cache
    assert second.built_now
    _check(second, 3.0)
    runs = _runs(counting_cxx)
    assert len(runs) == 1, runs  # one compiler call...
    assert " -shared " in runs[0] and " -c " not in f" {runs[0]} " and "decoder.o" in runs[0]  # ...that links
    assert "decoder.cpp" not in runs[0]


def test_only_the_handlers_are_exported(fresh_cache: Path) -> None:
    mod = _load("0.0f")
    done = subprocess.run(["nm", "-D", "--defined-only", str(mod.path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    names = {line.split()[-1] for line in done.stdout.splitlines() if line.strip()}
    ours = {n for n in names if n.startswith("be_")}
    assert ours == {"be_ffi_twice", "be_ffi_twice__graph", "be_impl_twice", "be_fwd_twice"}, ours
    assert not any("call_frame" in n for n in names), sorted(names)  # the decoder stays hidden


def test_user_ldflags_follow_the_source_in_the_one_call_build(tmp_path: Path, fresh_cache: Path) -> None:
    """A static archive is searched only for symbols still undefined when the linker reaches
    it: in the one-call build it must come after the user's source, as in a separate link."""
    (tmp_path / "helper.cpp").write_text('extern "C" float helper_offset() { return 5.0f; }\n')
    subprocess.run(
        ["g++", "-fPIC", "-c", str(tmp_path / "helper.cpp"), "-o", str(tmp_path / "helper.o")], check=True
    )
    subprocess.run(["ar", "rcs", str(tmp_path / "libhelper.a"), str(tmp_path / "helper.o")], check=True)
    source = 'extern "C" float helper_offset();\n' + KERNEL.replace("OFFSET", "helper_offset()")
    archive = [str(tmp_path / "libhelper.a")]
    for name in ("ld_first", "ld_second"):  # the first builds the decoder, the second is one call
        mod = brainevent.load_cpp_inline(name=name, cpp_sources=source, extra_ldflags=archive)
        _check(mod, 5.0)


def test_a_multi_file_module_still_reuses_its_unchanged_objects(
    tmp_path: Path, fresh_cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    src = tmp_path / "parts"
    src.mkdir()
    body = (
        '#include "brainevent/common.h"\n// @BE fill_{n} ret\n'
        "void fill_{n}(BE::Tensor o) {{ o.data_ptr<float>()[0] = {v}; }}\n"
    )
    (src / "a.cpp").write_text(body.format(n="a", v="1.0f"))
    (src / "b.cpp").write_text(body.format(n="b", v="2.0f"))

    def load() -> brainevent.CompiledModule:  # no public loader takes several C++ files
        units = [file_unit(src / f, (".cpp",)) for f in ("a.cpp", "b.cpp")]
        return load_request(make_request("cpu", units, "parts", None, {}))

    load()
    (src / "b.cpp").write_text(body.format(n="b", v="4.0f"))
    caplog.clear()  # the first load's lines too are captured when the logger already logs INFO
    with caplog.at_level(logging.INFO, logger="brainevent"):
        mod = load()
    assert mod.built_now and "1 object(s) reused" in caplog.text, caplog.text
    assert "shared FFI decoder" not in caplog.text  # built by the first load
    out = mod.fill_b(outs=jax.ShapeDtypeStruct((1,), jnp.float32))
    assert float(np.asarray(out)[0]) == 4.0


def test_decoder_key_differs_per_platform() -> None:
    cpu = decoder_salt(create("cpu").name)
    assert cpu["platform"] == "cpu" and cpu["binding_schema"] >= 9 and len(cpu["package_headers"]) == 64
    assert {"cxx", "cxx_identity", "xla_c_api", "package"} <= set(cpu)


def test_clearing_the_cache_removes_the_decoder(fresh_cache: Path) -> None:
    from brainevent.cache.admin import clear

    _load("0.0f")
    objects = fresh_cache / "v1" / DECODER_DIR / "objects"
    assert list(objects.glob("*.o"))
    clear(fresh_cache)
    assert not list(objects.glob("*.o"))
    _check(_load("0.0f"), 0.0)  # and the next build makes it again
