"""docs/compatibility.md's table of 0.2.1 test results is generated from the counts that
``tests/compat/run021.py --record`` saved, never copied by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.compat.compat_results import BEGIN, END, PAGE, RESULTS, counts, with_table

pytestmark = pytest.mark.skipif(not PAGE.is_file(), reason="not applicable: no docs/, not a source checkout")


def test_table_is_the_recorded_results() -> None:
    text = PAGE.read_text()
    assert BEGIN in text and END in text
    assert text == with_table(text), "regenerate it: python tests/compat/compat_results.py"
    cpu = json.loads((RESULTS / "cpu.json").read_text())
    row = f"| {cpu['passed']} | {cpu['failed']} | {cpu['xfailed']} | {cpu['skipped']} |"
    assert row in text


def test_counts_read_pytest_junit_xml(tmp_path: Path) -> None:
    junit = tmp_path / "r.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase name="a"/><testcase name="b"><failure message="x"/></testcase>'
        '<testcase name="c"><skipped type="pytest.xfail" message="deliberate"/></testcase>'
        '<testcase name="d"><skipped type="pytest.skip" message="gpu"/></testcase>'
        '<testcase name="e"><error message="setup"/></testcase>'
        "</testsuite></testsuites>"
    )
    assert counts(junit) == {"passed": 1, "failed": 2, "xfailed": 1, "skipped": 1}
