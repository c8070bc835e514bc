"""Every ``BRAINEVENT_*`` value goes through the one parser (brainevent.config): what it cannot
parse is a ConfigError naming the variable and the value, never a bound switched off or a raw
RuntimeError."""

from __future__ import annotations

import traceback

import pytest

import brainevent
from brainevent import config
from brainevent.config import ConfigError

BAD_SPEC = r"""
// @BE f arg rte
void f(const BE::Tensor x, BE::Tensor out) {}
"""


@pytest.mark.parametrize("variable", ["BRAINEVENT_COMPILE_TIMEOUT", "BRAINEVENT_LOCK_TIMEOUT"])
@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "1e400", "0", "-5", "1e12"])
def test_a_timeout_is_a_positive_finite_number_of_seconds(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    var = next(v for v in config.ALL if v.name == variable)
    with pytest.raises(ConfigError, match=rf"{variable}='{value}' is not valid") as info:
        var.get()
    assert info.value.variable == variable and info.value.value == value
    monkeypatch.setenv(variable, "2.5")
    assert var.get() == 2.5


@pytest.mark.parametrize(
    ("value", "expected"), [("false", False), ("off", False), ("no", False), ("1", True)]
)
def test_full_traceback_reads_a_boolean_as_every_switch_does(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: bool
) -> None:
    monkeypatch.setenv("BRAINEVENT_FULL_TRACEBACK", value)
    with pytest.raises(brainevent.SpecError) as info:
        brainevent.load_cpp_inline(name="cfg_frames", cpp_sources=BAD_SPEC, auto_register=False)
    frames = traceback.extract_tb(info.value.__traceback__)
    assert (len(frames) > 3) is expected, frames


def test_full_traceback_refuses_what_is_not_a_boolean(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAINEVENT_FULL_TRACEBACK", "maybe")
    with pytest.raises(ConfigError, match=r"BRAINEVENT_FULL_TRACEBACK='maybe' is not valid: expected one of"):
        brainevent.load_cpp_inline(name="cfg_frames", cpp_sources=BAD_SPEC, auto_register=False)


def test_a_cache_dir_of_an_unknown_user_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAINEVENT_CACHE_DIR", "~nosuchuser_be/x")
    with pytest.raises(ConfigError, match=r"BRAINEVENT_CACHE_DIR='~nosuchuser_be/x' is not valid.*in full"):
        brainevent.get_cache_dir()
    with pytest.raises(ConfigError, match=r"build_directory='~nosuchuser_be/y' is not valid"):
        brainevent.load_cpp_inline(
            name="cfg_root", cpp_sources="// nothing", build_directory="~nosuchuser_be/y", auto_register=False
        )
    with pytest.raises(ConfigError, match=r"set_cache_dir\(path\)='~nosuchuser_be/z' is not valid"):
        brainevent.set_cache_dir("~nosuchuser_be/z")
