"""A falsifier the head adds, run as cases: the review built in this process shows it as new (not
in the base's contract) with one line per case, whatever its cases measured."""

from __future__ import annotations

import shutil

import pytest

from pv.project import Project
from pv.review.compare import Row, review
from tests.pv.review.helpers import CONTRACT, committed_base

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

ADDED = """\
  - id: FALSIFY-MEAN-003
    prediction: the mean of n copies of 2 is 2
    check: mychecks.cases:mean_of_copies
    parametrize: {n: [1, 4]}
    expect: "value == 2"
    ship_blocking: false
"""
CASES_CHECKER = (
    "import pv\nfrom mysystem import stats\n\n\n@pv.checker(observes=['value'])\n"
    "def mean_of_copies(n):\n    return {'value': stats.mean([2] * n)}\n"
)


@pytest.fixture
def rows(pytester: pytest.Pytester) -> dict[str, Row]:
    contract = committed_base(pytester)
    root = pytester.path
    # the head adds a third falsifier, run as two cases
    (root / "mychecks" / "cases.py").write_text(CASES_CHECKER)
    text = CONTRACT.format(bound="value >= 1", blocking="true").replace("1.0.0", "1.1.0")
    contract.write_text(text + ADDED)
    assert pytester.runpytest("contracts", "--pv-evidence", "-p", "no:cacheprovider").ret == pytest.ExitCode.OK
    return {r.falsifier_id: r for r in review(Project.open(root), [contract], base="main").rows}


def test_a_falsifier_the_head_adds_is_new_with_a_line_per_case(rows: dict[str, Row]) -> None:
    added = rows["FALSIFY-MEAN-003"]
    assert (added.kind, added.why) == ("new", "not in the base's contract")
    # each case: its id after the falsifier's, its verdict, and the bound as it was measured
    assert added.cases == ["[1] survived: value(=2) == 2", "[4] survived: value(=2) == 2"]
    # the two the base already had are compared with it, not new
    assert rows["FALSIFY-MEAN-001"].kind != "new" and rows["FALSIFY-MEAN-002"].kind != "new"
