"""docs/install.md shows the images' measured runs as docker/measured.json records them,
and the record holds passing runs of both images that docker/build-podman.sh builds.

The record is written by docker/record.py from the script's own output, so the figures on
the page are a run's, not typed by hand; this test fails when the page or the record is
edited alone.
"""

from __future__ import annotations

import importlib.util
import json
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECORDER = ROOT / "docker" / "record.py"

pytestmark = pytest.mark.skipif(
    not RECORDER.is_file(), reason="not applicable: no docker/record.py, not a source checkout"
)


@pytest.fixture(scope="module")
def record() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docker_record", RECORDER)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_install_page_shows_the_record(record: ModuleType) -> None:
    data = json.loads(record.RECORD.read_text())
    page = record.PAGE.read_text()
    assert page.count(record.BEGIN) == 1 and page.count(record.END) == 1
    shown = page[page.index(record.BEGIN) : page.index(record.END) + len(record.END)]
    assert shown == record.table(data), "the page differs from the record: python3 docker/record.py --docs"


@pytest.mark.parametrize("target", ["cpu", "cuda13"])
def test_the_record_holds_a_passing_run(record: ModuleType, target: str) -> None:
    entry = json.loads(record.RECORD.read_text()).get(target)
    if entry is None:
        pytest.skip(f"no passing run of the {target} image is recorded yet (docker/build-podman.sh {target})")
    suite = entry["suite"]
    assert suite["passed"] > 1000 and suite["failed"] == 0 and suite["errors"] == 0, suite
    checks = entry["checks"]
    assert checks["problems"] == [] and checks["modules"], checks
    assert len(checks["loads"]) == 2, checks["loads"]
    if target == "cuda13":
        assert "passed" in checks["compile_only_tests"] and "failed" not in checks["compile_only_tests"]
        assert "pip-wheel" in checks["nvcc_in_image"]
        numbers = sorted(int(arch.removeprefix("sm_")) for arch in checks["archs"])
        expected = sorted([f"sass {n}" for n in numbers] + [f"ptx {numbers[-1]}"])  # SASS each, PTX newest
        for module in checks["modules"].values():
            assert module["gpu_code"] == expected, module


LOG = textwrap.dedent(
    """\
    [build-podman] base image localhost/brainevent-base:bookworm exists
    [build-podman] OCI runtime: /usr/sbin/runc
    [build-podman] cpu: building localhost/brainevent:cpu
    [5/5] STEP 3/6: RUN pip install ...
    Successfully installed brainevent-0.3.0 flatbuffers-25.12.19
    [build-podman] cpu: built in 198s; 2227646722 bytes
    [build-podman] cpu: running the test suite in the image
    ........s...
    1781 passed, 567 skipped, 3 warnings in 1500.51s (0:25:00)
    [build-podman] cpu: test suite passed in 1502s
    {
     "target": "cpu",
     "modules": {"scale": {"artifact": "libscale.so", "sha256": "00", "bytes": 1}},
     "loads": {"with the toolchain": "ok", "without a compiler": "ok"},
     "problems": []
    }
    [build-podman] cpu: image checks took 8s
    [build-podman] done: cpu
    """
)


def test_a_log_is_read_into_the_record(record: ModuleType, tmp_path: Path) -> None:
    (found,) = record.parse_log(LOG).values()
    assert found["install_step"] == "ran" and found["build_seconds"] == 198
    assert found["image_bytes"] == 2227646722 and found["runtime_path"] == "/usr/sbin/runc"
    assert found["suite"] == dict.fromkeys(record.OUTCOMES, 0) | {"passed": 1781, "skipped": 567}
    assert found["suite_seconds"] == 1502 and found["checks_seconds"] == 8
    assert found["checks"]["problems"] == []
    # A later run whose install step came from podman's cache keeps the cold build time.
    (tmp_path / "one.log").write_text(LOG)
    (tmp_path / "two.log").write_text(
        LOG.replace("Successfully installed brainevent-0.3.0 flatbuffers-25.12.19\n", "--> Using cache 1f\n")
        .replace("built in 198s", "built in 21s")
        .replace("1781 passed, 567 skipped", "1780 passed, 1 failed, 567 skipped")
    )
    data = record.record_logs([tmp_path / "one.log", tmp_path / "two.log"], tmp_path / "r.json", "abc1234")
    cpu = data["cpu"]
    assert (cpu["build_seconds"], cpu["cold_build_seconds"], cpu["install_step"]) == (21, 198, "cached")
    assert cpu["suite"]["failed"] == 1 and cpu["commit"] == "abc1234"
    shown = record.table(data)
    assert "21 s (install step cached; 3 min 18 s cold)" in shown
    assert "1780 passed, 567 skipped, 1 failed" in shown and "2.23 GB" in shown
    assert "`scale`: byte-identical" in shown
