"""--baseline forgives listed findings, fails on new ones, and shrinks as findings are fixed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pv.lint.baseline import Baseline, BaselineError

from .conftest import lint_dir

Copy = Callable[[str], Path]


def test_write_baseline_then_pass_on_old_findings(tree_copy: Copy) -> None:
    root = tree_copy("observations_fail")
    baseline = root / "pv-baseline.json"
    written = lint_dir(root, baseline=baseline, write_baseline=True)
    assert written.exit_code == 0 and written.baseline_written
    data = json.loads(baseline.read_text())
    assert data["version"] == 1 and len(data["findings"]) == 2
    assert list(data["findings"]) == sorted(data["findings"])
    assert {e["code"] for e in data["findings"].values()} == {"PV112", "PVL301"}

    report = lint_dir(root, baseline=baseline)
    assert report.exit_code == 0
    assert report.errors == 0 and report.baselined == 2
    assert all(f.baselined for f in report.findings)


def test_a_new_finding_fails_despite_the_baseline(tree_copy: Copy) -> None:
    root = tree_copy("observations_fail")
    baseline = root / "pv-baseline.json"
    lint_dir(root, baseline=baseline, write_baseline=True)
    path = root / "contracts" / "epsilon.yaml"
    path.write_text(path.read_text().replace("los <= limit", "los <= limit and gradnorm > 0"))
    report = lint_dir(root, baseline=baseline)
    assert report.exit_code == 1
    active = [f for f in report.findings if not f.baselined]
    assert [f.code for f in active] == ["PVL301"] and "'gradnorm'" in active[0].message
    assert report.baselined == 2


def test_fixed_findings_leave_the_baseline_and_it_never_grows(tree_copy: Copy) -> None:
    root = tree_copy("observations_fail")
    baseline = root / "pv-baseline.json"
    lint_dir(root, baseline=baseline, write_baseline=True)
    path = root / "contracts" / "epsilon.yaml"
    path.write_text(path.read_text().replace("los <= limit", "loss <= limit"))
    report = lint_dir(root, baseline=baseline)
    assert report.exit_code == 0 and report.baseline_fixed == 1
    remaining = json.loads(baseline.read_text())["findings"]
    assert [e["code"] for e in remaining.values()] == ["PV112"]

    # a new finding is reported, not added to the baseline
    path.write_text(path.read_text().replace("loss <= limit", "los2 <= limit"))
    assert lint_dir(root, baseline=baseline).exit_code == 1
    assert json.loads(baseline.read_text())["findings"] == remaining


def test_skipped_gates_do_not_shrink_the_baseline(tree_copy: Copy) -> None:
    root = tree_copy("observations_fail")
    baseline = root / "pv-baseline.json"
    lint_dir(root, baseline=baseline, write_baseline=True)
    before = baseline.read_bytes()
    path = root / "contracts" / "epsilon.yaml"
    path.write_text(path.read_text() + "unknown_section: 1\n")
    report = lint_dir(root, baseline=baseline)
    assert report.exit_code == 1 and report.gates[2].state == "skipped"
    assert baseline.read_bytes() == before


def test_baseline_errors_are_reported(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match="no such baseline"):
        Baseline.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 99}')
    with pytest.raises(BaselineError, match="not a pv lint baseline"):
        Baseline.load(bad)
