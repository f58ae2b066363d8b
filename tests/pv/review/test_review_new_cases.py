"""A falsifier the head adds, run as cases: the review built in this process shows it as new (not
in the base's contract) with one line per case, its id, verdict and the bound as measured.

The project is test_review_in_process's: evidence of the base committed on ``main``, and a head
whose mean is off by one; this head also adds the parametrized falsifier."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from pv.project import Project
from pv.review.compare import Row, review
from tests.pv.review.test_review_in_process import reviewed  # noqa: F401  (the fixture)

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
def rows(reviewed: tuple[Path, Any], pytester: pytest.Pytester) -> dict[str, Row]:  # noqa: F811
    root, _ = reviewed
    contract = root / "contracts" / "mean-v1.yaml"
    (root / "mychecks" / "cases.py").write_text(CASES_CHECKER)
    contract.write_text(contract.read_text().replace("1.0.0", "1.1.0") + ADDED)
    pytester.runpytest("contracts", "--pv-evidence", "-p", "no:cacheprovider")
    return {r.falsifier_id: r for r in review(Project.open(root), [contract], base="main").rows}


def test_a_falsifier_the_head_adds_is_new_with_a_line_per_case(rows: dict[str, Row]) -> None:
    added = rows["FALSIFY-MEAN-003"]
    assert (added.kind, added.why) == ("new", "not in the base's contract")
    # each case: its id after the falsifier's, its verdict, and the bound as it was measured (the
    # head's mean is off by one, so 2 copies of 2 average 3)
    assert added.cases == ["[1] falsified: value(=3) == 2", "[4] falsified: value(=3) == 2"]
    # the two the base already had are compared with it, not new
    assert rows["FALSIFY-MEAN-001"].kind != "new" and rows["FALSIFY-MEAN-002"].kind != "new"
