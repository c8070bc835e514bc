"""The load-option table (load_options.OPTIONS) and what is derived from it: every keyed option
keys the cache and bundles, prune keeps builds that differ in a variant option, and the CLI's
flags are the table's. A bundle built without OpenMP was once served to openmp=True."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from brainevent import load_cpp_file, load_cpp_inline
from brainevent.cache import admin
from brainevent.cache.bundle import KEYED, bundle_key
from brainevent.cli import _parser
from brainevent.cli import main as cli_main
from brainevent.load_options import CPU, CUDA, OPTIONS, make_options, variant_of
from brainevent.stages.module_key import derive_key
from brainevent.stages.request import file_unit, make_request

KERNEL = r"""
#include "brainevent/common.h"
// @BE omp_flag arg ret
void omp_flag(const BE::Tensor x, BE::Tensor out) {
#ifdef _OPENMP
    const float built_with_openmp = 1.0f;
#else
    const float built_with_openmp = 0.0f;
#endif
    for (int64_t i = 0; i < out.numel(); ++i) out.data_ptr<float>()[i] = built_with_openmp;
}
"""

# One changed value per keyed option; a keyed option added to the table without one fails
# test_every_keyed_option_has_a_changed_value.
CHANGED: dict[str, Any] = {
    "name": "renamed",
    "extra_cflags": ["-DX=1"],
    "extra_cuda_cflags": ["-DX=1"],
    "extra_ldflags": ["-Wl,-z,now"],
    "extra_include_paths": ["/usr/include"],
    "compute_capability": "sm_90",
    "optimization_level": 1,
    "use_fast_math": True,
    "extra_libraries": ["nvrtc"],
    "openmp": True,
}
BASE = {"compute_capability": "sm_80"}


def _rows(platform: str, what: str) -> list[str]:
    return [o.name for o in OPTIONS if platform in o.platforms and what in o.keys]


def _keys(tmp_path: Path, platform: str, **changes: Any) -> tuple[str, str, str | None]:
    """(portable key, bundle key, exact key or None) of a file's request with ``changes``."""
    source = tmp_path / ("k.cu" if platform == CUDA else "k.cpp")
    source.write_text(KERNEL)
    name = changes.pop("name", "k")
    keywords = {
        k: v
        for k, v in {**BASE, **changes}.items()
        if k in [o.name for o in OPTIONS if platform in o.platforms]
    }
    request = make_request(platform, [file_unit(source, (source.suffix,))], name, None, keywords)
    key = derive_key(request)
    bundled = bundle_key(request.units, key.keyed_without_toolchain, platform).digest
    return key.portable.digest, bundled, key.exact.digest if key.exact is not None else None


def test_every_keyed_option_has_a_changed_value() -> None:
    keyed = {o.name for o in OPTIONS if o.keys}
    assert keyed <= set(CHANGED), sorted(keyed - set(CHANGED))
    assert {"openmp", "extra_libraries"} <= set(_rows(CPU, "bundle"))  # the bug this table fixed


@pytest.mark.parametrize("platform", [CPU, CUDA])
def test_each_keyed_option_changes_the_keys_alone(tmp_path: Path, platform: str) -> None:
    if platform == CUDA and shutil.which("nvcc") is None:
        pytest.skip("no nvcc: the CUDA platform's exact key needs it")
    base = _keys(tmp_path, platform)
    for option in _rows(platform, "cache"):
        changed = _keys(tmp_path, platform, **{option: CHANGED[option]})
        assert changed[0] != base[0], f"{option} does not change the portable cache key"
        if base[2] is not None:
            assert changed[2] != base[2], f"{option} does not change the cache key"
        bundled = option in _rows(platform, "bundle")
        assert (changed[1] != base[1]) == bundled, f"{option}: bundle key changed is {not bundled}"


def test_the_bundle_key_and_prune_read_the_tables_entries() -> None:
    assert {"openmp", "extra_libraries", "extra_cflags", "name"} <= set(KEYED)
    assert "extra_include_paths" not in KEYED  # absolute paths differ between machines
    assert {"openmp", "extra_libraries", "archs", "functions"} <= set(variant_of({}))


def test_unknown_and_bad_options_are_refused_by_the_table(tmp_path: Path) -> None:
    (tmp_path / "k.cpp").write_text(KERNEL)
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['ninja_workers'\]"):
        load_cpp_file(tmp_path / "k.cpp", ninja_workers=2)  # a CUDA loader's option
    with pytest.raises(Exception, match=r"verbose='yes' must be True or False"):
        make_options("m", {"verbose": "yes"})
    with pytest.raises(Exception, match=r"extra_libraries entry 'cudart': a CUDA module already has"):
        make_options("m", {"extra_libraries": ["cudart"]}, CUDA)
    assert make_options("m", {"extra_cflags": ["-fopenmp", "-DA"]}).openmp is True


def _omp_flag(module: Any) -> float:
    return float(np.asarray(module.omp_flag(np.zeros(2, np.float32)))[0])


def test_a_bundle_built_without_openmp_is_not_served_to_openmp(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    source = package / "omp_kernel.cpp"
    source.write_text(KERNEL)
    assert (
        cli_main(["build", "--into", str(package), "--platform", "cpu", "--cache-dir", str(tmp_path / "c0")])
        == 0
    )
    cache = str(tmp_path / "cache")
    plain = load_cpp_file(source, build_directory=cache, target_prefix="omp_plain")
    assert "_brainevent" in str(plain.path) and _omp_flag(plain) == 0.0  # the bundle serves it
    with_openmp = load_cpp_file(source, build_directory=cache, openmp=True, target_prefix="omp_on")
    assert with_openmp.built_now and "_brainevent" not in str(with_openmp.path)
    assert _omp_flag(with_openmp) == 1.0
    # Built with --openmp, the bundle serves openmp=True.
    assert cli_main(["build", "--into", str(package), "--openmp", "--cache-dir", str(tmp_path / "c1")]) == 0
    bundled = load_cpp_file(source, build_directory=cache, openmp=True, target_prefix="omp_bundled")
    assert "_brainevent" in str(bundled.path) and _omp_flag(bundled) == 1.0


def test_prune_keeps_builds_that_differ_in_openmp(tmp_path: Path) -> None:
    for openmp in (False, True):
        load_cpp_inline(
            "prune_omp", KERNEL, build_directory=str(tmp_path), openmp=openmp, auto_register=False
        )
    entries = list(admin.iter_entries(tmp_path, "prune_omp"))
    assert len(entries) == 2
    assert admin.superseded(entries, keep=1) == []  # two builds, not two versions of one


def test_the_build_commands_flags_are_the_tables() -> None:
    flagged = [o for o in OPTIONS if o.cli]
    defaults = _parser().parse_args(["build", "x.cpp"])
    for option in flagged:
        assert getattr(defaults, option.name) == option.default, option.name
    args = _parser().parse_args(
        [
            "build",
            "x.cu",
            "--openmp",
            "-O",
            "1",
            "--use-fast-math",
            "--arch",
            "sm_80",
            "--extra-library",
            "cublas",
        ]
    )
    assert (args.openmp, args.optimization_level, args.use_fast_math) == (True, 1, True)
    assert (args.compute_capability, args.extra_libraries) == (["sm_80"], ["cublas"])
