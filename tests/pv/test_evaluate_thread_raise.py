"""A checker that raises in the pytest process (thread isolation, the default) is an error, not a
falsification, that shows the exception and says how long the checker ran before it raised."""

from __future__ import annotations

from pv.results import Verdict
from pv.run_checker import FalsifierText, evaluate_call
from tests.pv.test_run_checker_child_edges import _fails_late


def test_a_checker_that_raises_in_a_thread_is_an_error_with_its_exception_and_duration() -> None:
    ev = evaluate_call(
        _fails_late,
        {},
        observes=["x"],
        expect="x < 2",
        params={},
        text=FalsifierText("c::FALSIFY-RAISE-001"),
        timeout_s=30,
        seed=0,
    )
    assert ev.verdict is Verdict.ERROR
    head, _, rest = ev.message.partition("\n")
    assert head == "ERROR c::FALSIFY-RAISE-001: the checker raised (an error, not a falsification)"
    assert "ValueError: the checker failed" in rest
    assert 0.05 <= ev.duration_s < 30
