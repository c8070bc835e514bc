"""The results of ``run021.py --record``: counts from pytest's JUnit XML, kept as JSON under
docs/compatibility-results/, and the table of docs/compatibility.md written from them."""

from __future__ import annotations

import datetime
import json
import platform
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "compatibility-results"
PAGE = ROOT / "docs" / "compatibility.md"
BEGIN, END = "<!-- compat-results: begin -->", "<!-- compat-results: end -->"
COMMANDS = {
    "cpu": "`PYTHONPATH=src python tests/compat/run021.py`",
    "gpu": "`run021.py --gpu --wheel <0.2.1 wheel>`",
}


def counts(junit: Path) -> dict[str, int]:
    """passed, failed (failures and errors), xfailed and skipped test cases."""
    out = {"passed": 0, "failed": 0, "xfailed": 0, "skipped": 0}
    for case in ET.parse(junit).getroot().iter("testcase"):
        kinds = {child.tag: child for child in case}
        if "failure" in kinds or "error" in kinds:
            out["failed"] += 1
        elif "skipped" in kinds:
            xfail = kinds["skipped"].get("type") == "pytest.xfail"
            out["xfailed" if xfail else "skipped"] += 1
        else:
            out["passed"] += 1
    return out


def _where(gpu: bool) -> str:
    import jax

    if gpu:
        device = jax.devices("gpu")[0].device_kind
        return f"GPU ({device}, JAX {jax.__version__}, Python {platform.python_version()})"
    import os

    machine = f"{os.cpu_count()}-CPU {platform.machine()}"
    return f"CPU ({machine}, JAX {jax.__version__}, Python {platform.python_version()})"


def record(junit: Path, *, gpu: bool) -> Path:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    data = {
        **counts(junit),
        "date": datetime.date.today().isoformat(),
        "commit": commit,
        "where": _where(gpu),
        "command": COMMANDS["gpu" if gpu else "cpu"],
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{'gpu' if gpu else 'cpu'}.json"
    path.write_text(json.dumps(data, indent=2) + "\n")
    PAGE.write_text(with_table(PAGE.read_text()))
    return path


def table() -> str:
    rows = [
        "| where | passed | failed | expected failures (deliberate) | skipped | run |",
        "|---|---|---|---|---|---|",
    ]
    for name in ("cpu", "gpu"):
        path = RESULTS / f"{name}.json"
        if not path.is_file():
            continue
        r = json.loads(path.read_text())
        rows.append(
            f"| {r['where']}: {r['command']} | {r['passed']} | {r['failed']} | {r['xfailed']} | "
            f"{r['skipped']} | {r['date']}, commit {r['commit']} |"
        )
    return "\n".join(rows)


def with_table(text: str) -> str:
    """``text`` with the part between the markers replaced by the table of the results."""
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{table()}\n\n{END}{tail}"  # a blank line ends the table


if __name__ == "__main__":  # rewrite the page's table from the recorded results
    PAGE.write_text(with_table(PAGE.read_text()))
    sys.exit(0)
