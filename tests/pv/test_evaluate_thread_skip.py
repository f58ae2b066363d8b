"""A checker that skips in the pytest process (thread isolation, the default) is a skip whose
message and reason are its own words, and it says how long the checker ran before it skipped."""

from __future__ import annotations

from pv.results import Verdict
from pv.run_checker import FalsifierText, evaluate_call
from tests.pv.test_run_checker_child_edges import _skips_late


def test_a_checker_that_skips_in_a_thread_is_a_skip_with_its_reason_and_duration() -> None:
    ev = evaluate_call(
        _skips_late,
        {},
        observes=["x"],
        expect="x < 2",
        params={},
        text=FalsifierText("c::FALSIFY-SKIP-001"),
        timeout_s=30,
        seed=0,
    )
    assert ev.verdict is Verdict.SKIPPED
    assert ev.message == ev.skip_reason == "nothing to measure here"
    assert 0.05 <= ev.duration_s < 30
