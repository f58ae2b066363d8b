"""The review built in this process from a real project: evidence written by the plugin at the base
commit (committed) and at the head (a change of the code under test and of one bound), read by
``pv.review.compare.review`` and ``pv.review.sections.build`` field by field.  The subprocess flow
(tests/pv/review/test_review_flow.py) checks the commands; this one checks what they print from."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pv.project import Project
from pv.review.compare import review
from pv.review.markdown import render
from pv.review.sections import build
from tests.pv.review.helpers import CONTRACT, means_project

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(where: Path, *args: str) -> str:
    cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@e", *args]
    return subprocess.run(cmd, cwd=where, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def reviewed(pytester: pytest.Pytester) -> tuple[Path, Any]:
    contract = means_project(pytester, "value >= 1", "true")
    root = pytester.path
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "code")
    assert pytester.runpytest("contracts", "--pv-evidence", "-p", "no:cacheprovider").ret == pytest.ExitCode.OK
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "evidence of the base")
    # the head: the mean is off by one (both falsifiers read it) and one bound moves
    (root / "mysystem" / "stats.py").write_text("def mean(xs):\n    return sum(xs) / len(xs) + 1\n")
    contract.write_text(CONTRACT.format(bound="value >= 2.5", blocking="true"))
    done = pytester.runpytest("contracts", "--pv-evidence", "-p", "no:cacheprovider")
    assert done.ret == pytest.ExitCode.TESTS_FAILED  # FALSIFY-MEAN-001 expects 2
    return root, review(Project.open(root), [contract], base="main")


def test_the_review_reads_each_falsifier_base_against_head(reviewed: tuple[Path, Any]) -> None:
    root, r = reviewed
    assert (r.base_ref, r.base_commit, r.head_commit) == ("main", _git(root, "rev-parse", "main"), r.base_commit)
    rows = {row.falsifier_id: row for row in r.rows}
    first, second = rows["FALSIFY-MEAN-001"], rows["FALSIFY-MEAN-002"]
    assert (first.kind, first.why, first.base_verdict, first.head_verdict) == (
        "regressed", "survived → falsified", "survived", "falsified",
    )  # fmt: skip
    assert (first.ship_blocking, first.line, first.head_expect, first.changed) == (
        False, 3, "value == 2", ["code: 1 edited (mysystem/stats.py)"],
    )  # fmt: skip
    assert first.reproduce == "pytest contracts/mean-v1.yaml::FALSIFY-MEAN-001 --pv-mutants -p no:cacheprovider"
    assert [(v.name, v.base, v.head, v.delta) for v in first.values] == [("value", 2.0, 3.0, 1.0)]
    assert first.message.startswith("FALSIFIED mean-v1::FALSIFY-MEAN-001") and first.expect_now == "value(=3) == 2"
    assert (second.kind, second.why, second.bound_moved, second.base_expect, second.head_expect) == (
        "improved", "value moved away from the bound beyond the noise", True, "value >= 1", "value >= 2.5",
    )  # fmt: skip
    assert second.changed == ["bound moved", "code: 1 edited (mysystem/stats.py)"]
    assert [(v.name, v.base, v.head, v.limit, v.better, v.moved) for v in second.values] == [
        ("value", 2.0, 3.0, 2.5, "higher", "better")
    ]
    assert (second.ship_blocking, second.line, second.head_verdict, second.mutant) == (True, 8, "survived", None)
    assert [p.values for p in first.history] == [{"value": 2.0}]  # the base's run, on its line
    (contract,) = r.contracts
    assert (contract.id, contract.path, contract.base_missing, len(contract.head_runs)) == (
        "mean-v1", "contracts/mean-v1.yaml", "", 1,
    )  # fmt: skip
    assert contract.base_run is not None and contract.base_digest is not None and len(contract.base_digest) == 64
    data = json.loads(json.dumps(r.to_json()))  # JSON as written, every value
    assert sorted(data) == [
        "base", "contracts", "counts", "head", "rows", "schema", "status_changes", "threshold", "trust",
    ]  # fmt: skip
    assert data["counts"] == {"regressed": 1, "improved": 1, "unchanged": 0, "new": 0, "missing": 0, "bounds_moved": 1}
    assert data["base"] == {"ref": "main", "commit": r.base_commit} and data["schema"] == "pv-review/1"
    assert data["head"] == {"commit": r.head_commit} and data["threshold"] == 0.05 and data["trust"] == r.trust
    # the ship-blocking claim survived (no mutant declared), the failing one is advisory: ACTIVE is backed
    assert data["status_changes"] == [{"contract": "mean-v1", "before": "DRAFT", "after": "ACTIVE"}]
    assert data["contracts"][0]["id"] == "mean-v1"
    assert data["contracts"][0]["base_digest"] == contract.base_digest
    assert data["rows"][0]["values"][0]["name"] == "value" and data["rows"][1]["bound_moved"] is True
    assert [row["falsifier_id"] for row in data["rows"]] == ["FALSIFY-MEAN-001", "FALSIFY-MEAN-002"]
    assert "### Regressed (1)" in render(r)


def test_the_sections_read_the_newest_bundle_of_each_contract(reviewed: tuple[Path, Any]) -> None:
    root, _ = reviewed
    report = build(Project.open(root), [root / "contracts" / "mean-v1.yaml"])
    (section,) = report.sections
    assert (section.contract_id, section.path, section.before) == ("mean-v1", "contracts/mean-v1.yaml", "DRAFT")
    assert [(row.id, row.verdict, row.ship_blocking) for row in section.rows] == [
        ("FALSIFY-MEAN-001", "falsified", False),
        ("FALSIFY-MEAN-002", "survived", True),
    ]
    assert section.rows[0].observation == "value = 3" and section.rows[0].bound == "value(=3) == 2"
