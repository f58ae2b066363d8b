"""A parametrized falsifier's case rows: a case that ran shows what it measured against the bound;
one that was skipped or not run shows the bound as written, whatever observations it carries."""

from __future__ import annotations

import pytest

from pv.bundle.model import CaseEntry, FalsifierEntry, MutantEntry, VerdictName
from pv.review.sections import _rows as rows_of


def _entry(case_verdict: VerdictName) -> FalsifierEntry:
    return FalsifierEntry(
        id="FALSIFY-X-001",
        ship_blocking=True,
        selected=True,
        verdict="survived",
        expect="loss <= limit",
        params={"limit": 2.0},
        mutant=MutantEntry(declared=None, verdict=None),
        cases=[
            CaseEntry(id="a", verdict="survived", params={"limit": 2.0}, observations={"loss": 1.5}),
            CaseEntry(id="b", verdict=case_verdict, params={"limit": 2.0}, observations={"loss": 9.0}),
        ],
    )


def test_a_case_that_ran_shows_its_measure_against_the_bound() -> None:
    _, ran, _ = rows_of(_entry("survived"))
    assert (ran.id, ran.verdict, ran.observation, ran.bound) == (
        "FALSIFY-X-001[a]",
        "survived",
        "loss = 1.5",
        "loss(=1.5) <= limit(=2)",
    )


@pytest.mark.parametrize("verdict", ["skipped", "not_run"])
def test_a_case_that_did_not_run_shows_the_bound_as_written(verdict: VerdictName) -> None:
    *_, other = rows_of(_entry(verdict))
    assert (other.id, other.verdict, other.observation, other.bound) == (
        "FALSIFY-X-001[b]",
        verdict,
        "",
        "loss <= limit",
    )
