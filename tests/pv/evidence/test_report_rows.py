"""The review table's key observation is the one that decides the verdict, its floats rounded."""

from __future__ import annotations

from typing import Any

import pytest

from pv.bundle.model import FalsifierEntry, MutantEntry
from pv.expr import parse
from pv.review.sections import observation_and_bound

EXPECT = "adapter_effect > 0.1 and reload_max_abs_diff == 0 and merge_max_abs_diff <= 1e-5 and 0 < rel <= 0.095"
SURVIVING = {"adapter_effect": 0.8664723634, "reload_max_abs_diff": 0.0, "merge_max_abs_diff": 3.874e-07, "rel": 0.0915}


def _entry(verdict: str, observations: dict[str, Any], expect: str = EXPECT) -> FalsifierEntry:
    return FalsifierEntry(
        id="FALSIFY-X-001",
        ship_blocking=True,
        selected=True,
        verdict=verdict,  # type: ignore[arg-type]
        expect=expect,
        observations=observations,
        mutant=MutantEntry(declared=None, verdict=None),
    )


def test_a_surviving_falsifier_shows_the_observation_closest_to_its_bound() -> None:
    observation, bound = observation_and_bound(_entry("survived", SURVIVING))
    # rel sits 3.7% under 0.095; adapter_effect and merge_max_abs_diff are far from theirs, and an
    # equality that holds is no bound to be near
    assert observation == "rel = 0.0915"
    assert "adapter_effect(=0.8665) > 0.1" in bound and "merge_max_abs_diff(=3.874e-07) <= 1e-5" in bound


def test_a_falsified_one_shows_the_clause_that_failed() -> None:
    observation, _ = observation_and_bound(_entry("falsified", {**SURVIVING, "merge_max_abs_diff": 0.5}))
    assert observation == "merge_max_abs_diff = 0.5"
    observation, _ = observation_and_bound(_entry("falsified", {**SURVIVING, "reload_max_abs_diff": 2.0e-3}))
    assert observation == "reload_max_abs_diff = 0.002"


@pytest.mark.parametrize(
    ("expect", "observations", "decides"),
    [
        ("counterexamples == 0", {"counterexamples": 0}, "counterexamples"),
        ("x < limit", {"x": 3.0}, "x"),  # the bound is a param, not an observation
        ("a <= 1 or b <= 1", {"a": 0.5, "b": 2.0}, "a"),  # no conjunction to split: first named
    ],
)
def test_deciding_name_falls_back_sensibly(expect: str, observations: dict[str, Any], decides: str) -> None:
    env = {**observations, "limit": 4.0}
    assert parse(expect).deciding_name(env, observations.keys()) == decides


def _full(verdict: str, **extra: Any) -> FalsifierEntry:
    fields: dict[str, Any] = {
        "id": "FALSIFY-X-002",
        "ship_blocking": False,
        "selected": True,
        "verdict": verdict,
        "expect": "loss <= 2",
        "observations": {"loss": 1.5},
        "duration_s": 0.25,
        "mutant": MutantEntry(declared=None, verdict=None),
        **extra,
    }
    return FalsifierEntry(**fields)


@pytest.mark.parametrize(
    ("entry", "note"),
    [
        (_full("survived", mutant=MutantEntry(declared="m:f", verdict=None)), "mutant not run"),
        (_full("survived", mutant=MutantEntry(declared="m:f", verdict="falsified", killed=True)), "mutant killed"),
        (
            _full("survived", mutant=MutantEntry(declared="m:f", verdict="survived", killed=False)),
            "mutant SURVIVED: vacuous",
        ),
        (_full("survived"), ""),  # no mutant declared: nothing to say
        (_full("falsified", message="loss(=3) <= 2\nmore lines"), "loss(=3) <= 2"),
        (_full("error", message="boom"), "boom"),
        (_full("not_run", message="interrupted", observations={}), "interrupted"),
        (_full("skipped", skip_reason="no CUDA", observations={}), "no CUDA"),
        (_full("survived", skip_reason="x", message="y"), "x"),  # a survivor's message is not its note
        (
            _full("inconclusive", noise={"loss": {"interval": [1.0, 3.0], "figures": {"reference_cv": 0.02}}}),
            "inconclusive: loss in [1, 3] (reference_cv 0.02)",
        ),
        (_full("inconclusive"), "inconclusive: the noise left the bound undecided"),
    ],
)
def test_each_rows_note(entry: FalsifierEntry, note: str) -> None:
    from pv.review.sections import Row, _rows

    (row,) = _rows(entry, "run-1")
    assert row.note == note
    observation = "loss = 1.5" if entry.observations and entry.verdict not in ("not_run", "skipped") else ""
    bound = "loss(=1.5) <= 2" if observation else "loss <= 2"
    assert row == Row("FALSIFY-X-002", False, entry.verdict, observation, bound, 0.25, note, "run-1")
    assert _rows(entry)[0].source == ""


def test_what_left_a_bound_undecided() -> None:
    from pv.review.sections import noise_note

    two = {
        "rate": {"interval": [1.23456, 2.5], "figures": {"reference_cv": 0.0123456, "loadavg_1m": 3.0}},
        "cv": {"interval": [0.01, 0.09]},
        "lat": {"figures": {"cpus": 2.0}},
    }
    assert noise_note(two) == (
        "inconclusive: cv in [0.01, 0.09]; lat (cpus 2); rate in [1.235, 2.5] (loadavg_1m 3, reference_cv 0.01235)"
    )
    assert noise_note({}) == "inconclusive: the noise left the bound undecided"


def test_a_row_writes_each_value_into_its_expect() -> None:
    entry = _entry("survived", {"xs": [1.0, 2.0], "y": 1.23456}, expect="max(xs) < 5 and y > 1")
    observation, bound = observation_and_bound(entry)
    assert bound == "max(xs(=(1.0, 2.0))) < 5 and y(=1.235) > 1"  # a falsifier's own row: every value as it is
    assert observation == "y = 1.235"
    for verdict in ("not_run", "skipped"):
        assert observation_and_bound(_entry(verdict, {"y": 2.0}, expect="y > 1")) == ("", "y > 1")
    assert observation_and_bound(_entry("survived", {}, expect="y > 1")) == ("", "y > 1")
    assert observation_and_bound(_entry("survived", {"y": 2.0}, expect="y >")) == ("", "y >")
    assert observation_and_bound(_entry("survived", {"y": 2.0}, expect="")) == ("", "")
    assert observation_and_bound(_entry("survived", {"z": 2.0}, expect="1 < 2")) == ("", "1 < 2")


def test_each_case_of_a_parametrized_falsifier_gets_its_own_row() -> None:
    from pv.bundle.model import CaseEntry
    from pv.review.sections import Row, _rows

    entry = FalsifierEntry(
        id="FALSIFY-X-003",
        ship_blocking=True,
        selected=True,
        verdict="falsified",
        expect="loss <= limit",
        mutant=MutantEntry(declared=None, verdict=None),
        cases=[
            CaseEntry(id="a", verdict="survived", params={"limit": 2.0}, observations={"loss": 1.5}, duration_s=0.5),
            CaseEntry(
                id="b", verdict="falsified", params={"limit": 2.0}, observations={"loss": 2.5}, duration_s=1.5,
                message="loss too high\nsecond line",
            ),
            CaseEntry(id="c", verdict="skipped", params={"limit": 2.0}, skip_reason="no CUDA", message="ignored"),
            CaseEntry(id="d", verdict="not_run", params={"limit": 2.0}),
        ],
    )  # fmt: skip
    assert _rows(entry)[1:] == [
        Row("FALSIFY-X-003[a]", True, "survived", "loss = 1.5", "loss(=1.5) <= limit(=2)", 0.5, ""),
        Row("FALSIFY-X-003[b]", True, "falsified", "loss = 2.5", "loss(=2.5) <= limit(=2)", 1.5, "loss too high"),
        Row("FALSIFY-X-003[c]", True, "skipped", "", "loss <= limit", 0.0, "no CUDA"),
        Row("FALSIFY-X-003[d]", True, "not_run", "", "loss <= limit", 0.0, ""),
    ]


def test_a_bound_is_the_text_as_written_when_nothing_ran_or_it_does_not_parse() -> None:
    from pv.review.sections import _bound

    assert _bound("loss <= 1", {"loss": 0.5}, {"loss": 0.5}) == ("loss = 0.5", "loss(=0.5) <= 1")
    assert _bound("loss <= 1", {"loss": 0.5}, {"loss": 0.5}, "skipped") == ("", "loss <= 1")
    assert _bound("loss <= limit", {"loss": 0.5}, {"loss": 0.5}) == ("loss = 0.5", "loss(=0.5) <= limit(=?)")
    assert _bound("loss <=", {}, {"loss": 0.5}) == ("", "loss <=")
