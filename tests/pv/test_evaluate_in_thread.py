"""A checker that skips or raises in the pytest process (thread isolation, the default) ends as the
forked ones in test_evaluate_call_endings do: a skip with its own reason, or an error that shows the
exception, each saying how long the checker ran first."""

from __future__ import annotations

from pv.results import Verdict
from tests.pv.test_evaluate_call_endings import _evaluate
from tests.pv.test_run_checker_child_edges import _fails_late, _skips_late


def test_a_checker_that_skips_in_a_thread_is_a_skip_with_its_reason_and_duration() -> None:
    ev = _evaluate(_skips_late)
    assert ev.verdict is Verdict.SKIPPED
    assert ev.message == ev.skip_reason == "nothing to measure here"
    assert 0.05 <= ev.duration_s < 30


def test_a_checker_that_raises_in_a_thread_is_an_error_with_its_exception_and_duration() -> None:
    ev = _evaluate(_fails_late)
    assert ev.verdict is Verdict.ERROR
    head, _, rest = ev.message.partition("\n")
    assert head == "ERROR c::FALSIFY-END-001: the checker raised (an error, not a falsification)"
    assert "ValueError: the checker failed" in rest
    assert 0.05 <= ev.duration_s < 30
