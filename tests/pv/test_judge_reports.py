"""What a judged expect says when it cannot decide: every non-finite observation it reads is named,
with the fix; an undecided bound shows the expect, the values it was read with and each interval."""

from __future__ import annotations

from pv.results import Verdict
from pv.run_checker import FalsifierText, judge

TEXT = FalsifierText("c::FALSIFY-REPORT-001")


def test_every_non_finite_observation_is_named_with_the_fix() -> None:
    seen = {"a": float("nan"), "b": float("inf"), "c": 1.0}
    verdict, message = judge("a < 1 and b < 2 and c < 3", seen, TEXT, seen)
    assert verdict is Verdict.ERROR
    assert message == (
        "ERROR c::FALSIFY-REPORT-001: non-finite observation(s) a = nan, b = inf: a NaN or infinity "
        "makes comparisons meaningless; the measurement failed (list the name in allow_nonfinite if it may be)"
    )


def test_an_undecided_bound_shows_the_expect_and_the_values_it_read() -> None:
    noise = {"t": {"interval": [0.8, 1.2], "figures": {"runs": 3}}}
    verdict, message = judge("t < 1", {"t": 0.9}, TEXT, {"t": 0.9}, noise=noise)
    assert verdict is Verdict.INCONCLUSIVE
    assert message.splitlines()[:4] == [
        "INCONCLUSIVE c::FALSIFY-REPORT-001: the measurement's noise leaves the bound undecided",
        "  expect:       t < 1",
        "  with values:  t(=0.9) < 1",
        '  t = 0.9, within [0.8, 1.2]: {"runs": 3}',
    ]
