"""The suite runs without Hypothesis warnings where its example database cannot be written.

The images run the tests as an unprivileged user in a directory it cannot write (and with
no usable HOME); Hypothesis would warn in every property test. conftest.py then configures
no database. Checked by running one property test in a child pytest, with the default
location made unusable, with and without conftest.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("hypothesis", reason="Hypothesis is not installed (pip install hypothesis)")

ROOT = Path(__file__).resolve().parents[2]
PROPERTY_TEST = "tests/spec/test_spec_tokens.py::test_canonical_form_round_trips"
WARNING = "The database setting is not configured, and the default location is unusable"
_CI_VARS = (
    "CI",
    "TF_BUILD",
    "BUILDKITE",
    "CIRCLECI",
    "CIRRUS_CI",
    "CODEBUILD_BUILD_ID",
    "GITHUB_ACTIONS",
    "GITLAB_CI",
    "HEROKU_TEST_RUN_ID",
    "TEAMCITY_VERSION",
    "bamboo.buildKey",
)


def _pytest(
    *args: str, env: dict[str, str], prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, PROPERTY_TEST],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _env(**extra: str) -> dict[str, str]:
    # Without CI=...: on CI Hypothesis loads its "ci" profile, which has no database at all.
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYPOTHESIS_") and k not in _CI_VARS}
    env["PYTHONPATH"] = str(ROOT / "src")
    env.update(extra)
    return env


def test_unusable_database_location_gives_no_warning(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")  # a path beneath a regular file can never be created
    env = _env(HYPOTHESIS_STORAGE_DIRECTORY=str(blocker / ".hypothesis"))
    done = _pytest(env=env)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "1 passed" in done.stdout and WARNING not in done.stdout, done.stdout[-3000:]
    # Without conftest.py's setting the same run warns: the check above can fail.
    bare = _pytest("--noconftest", env=env)
    assert WARNING in bare.stdout, bare.stdout[-3000:]


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to run a child as uid 65534",
)
def test_as_nobody_without_home() -> None:
    """As the images run it: another uid, a checkout it cannot write, HOME unset."""
    env = _env()
    env.pop("HOME", None)
    # Reading (not writing) everything as root would: the interpreter may live under /root.
    setpriv = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
    caps = ("--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search")
    probe = subprocess.run(
        [*setpriv, *caps, sys.executable, "-c", f"import os; print(os.access({str(ROOT)!r}, os.W_OK))"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if probe.returncode != 0 or probe.stdout.strip() != "False":
        pytest.skip(
            f"cannot run this interpreter as uid 65534 in a read-only checkout: {probe.stderr.strip()}"
        )
    done = _pytest(env=env, prefix=(*setpriv, *caps))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "1 passed" in done.stdout and WARNING not in done.stdout, done.stdout[-3000:]
