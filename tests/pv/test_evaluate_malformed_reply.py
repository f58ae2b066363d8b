"""A checker's reply with problems is an error that lists every problem, keeps the observations
that were good and says how long the checker ran."""

from __future__ import annotations

import time

from pv.results import Verdict
from pv.run_checker import FalsifierText, evaluate_call


def _half_good() -> dict[object, float]:
    time.sleep(0.05)
    return {1: 0.5, "loss": 2.0}


def test_a_malformed_reply_lists_its_problems_and_keeps_the_good_observations() -> None:
    ev = evaluate_call(
        _half_good,
        {},
        observes=["loss", "accuracy"],
        expect="loss < 3",
        params={},
        text=FalsifierText("c::FALSIFY-REPLY-001"),
        timeout_s=30,
        seed=0,
    )
    assert ev.verdict is Verdict.ERROR
    assert ev.message == (
        "ERROR c::FALSIFY-REPLY-001: malformed observations: observation key 1 is not a string; "
        "missing declared observation(s): accuracy"
    )
    assert ev.observations == {"loss": 2.0}
    assert 0.05 <= ev.duration_s < 30
