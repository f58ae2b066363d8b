"""Every way a checker's call can end, as the evaluation reports it: a seeding failure, a deadline
passed in a thread (abandoned, with where it was) or in a forked process (its group killed), a
skip or a failure inside a forked checker, and a plain result; each says how long it ran."""

from __future__ import annotations

import time
from typing import Any

import pytest

from pv import run_checker
from pv.results import Verdict
from pv.run_checker import Evaluation, FalsifierText, evaluate_call
from tests.pv.test_run_checker_child_edges import _fails_late, _skips_late

TEXT = FalsifierText("c::FALSIFY-END-001")


def _sleeps(seconds: float) -> dict[str, float]:
    time.sleep(seconds)
    return {"x": 1.0}


def _evaluate(checker: Any, isolation: str = "thread", timeout_s: float = 30, **kwargs: Any) -> Evaluation:
    return evaluate_call(
        checker,
        kwargs,
        observes=["x"],
        expect="x < 2",
        params={},
        text=TEXT,
        timeout_s=timeout_s,
        seed=0,
        isolation=isolation,
    )


def test_a_seeding_failure_is_an_error_that_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(seed: int) -> None:
        raise RuntimeError("no generator")

    monkeypatch.setattr(run_checker, "seed_everything", broken)
    ev = _evaluate(_sleeps, seconds=0)
    assert ev.verdict is Verdict.ERROR
    assert ev.message == "ERROR c::FALSIFY-END-001: seeding failed: RuntimeError: no generator"


def test_a_thread_past_its_deadline_is_abandoned_and_shows_where_it_was() -> None:
    ev = _evaluate(_sleeps, timeout_s=0.2, seconds=3)
    assert ev.verdict is Verdict.ERROR
    head, _, stack = ev.message.partition("\nwhere it was at the deadline (innermost last):\n")
    assert head == "ERROR c::FALSIFY-END-001: checker timed out after 0.2 s (abandoned, still running)"
    assert "_sleeps" in stack
    assert 0.2 <= ev.duration_s < 3


def test_a_forked_checker_past_its_deadline_has_its_process_group_killed() -> None:
    ev = _evaluate(_sleeps, isolation="process", timeout_s=0.3, seconds=30)
    assert ev.verdict is Verdict.ERROR
    assert ev.message.startswith(
        "ERROR c::FALSIFY-END-001: checker timed out after 0.3 s (its process group was killed)"
    )
    assert 0.3 <= ev.duration_s < 30


def test_a_forked_checker_that_skips_is_a_skip_with_its_reason_and_duration() -> None:
    ev = _evaluate(_skips_late, isolation="process")
    assert ev.verdict is Verdict.SKIPPED
    assert ev.message == ev.skip_reason == "nothing to measure here"
    assert 0.05 <= ev.duration_s < 30


def test_a_forked_checker_that_fails_is_an_error_with_its_duration() -> None:
    ev = _evaluate(_fails_late, isolation="process")
    assert ev.verdict is Verdict.ERROR
    assert ev.message.startswith("ERROR c::FALSIFY-END-001: the checker failed (an error, not a falsification)\n")
    assert "the checker failed" in ev.message.partition("\n")[2]
    assert 0.05 <= ev.duration_s < 30


def test_a_plain_result_says_how_long_the_checker_ran() -> None:
    ev = _evaluate(_sleeps, seconds=0.05)
    assert ev.verdict is Verdict.SURVIVED and ev.observations == {"x": 1.0}
    assert 0.05 <= ev.duration_s < 30
