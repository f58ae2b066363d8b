"""The bench checkers: the brick's own figures, and the timer checked against a scripted clock."""

from __future__ import annotations

import pytest

from engine.faults import FAULTS
from falsifiers.bench_stability.bench import brick_cv, timer_accounting
from pv.noise import Measured

TIMER = {
    "repetitions": 4,
    "warmup": 2,
    "min_rep_s": 0.01,
    "call_s": 0.001,
    "cold_s": 0.5,
    "jitter": 0.2,
    "real_call_s": 0.002,
}


def test_brick_cv_reports_the_brick_figures() -> None:
    obs = brick_cv(brick="loss", repetitions=3, warmup=1, min_rep_s=0.002, threads=1)
    # a call slower than min_rep_s (a loaded machine) is timed alone: what always holds is the length
    assert obs["repetitions_timed"] == 3 and obs["calls_per_rep"] >= 1 and obs["shortest_rep_s"] >= 0.002
    cv = obs["cv"]  # the CPU-time CV with the interval the reference workload's noise leaves it in
    assert isinstance(cv, Measured) and 0 <= cv.low <= cv.value <= cv.high
    assert obs["worst_cv"] == cv and obs["wall_cv"] >= 0 and obs["reference_cv"] >= 0
    assert cv.noise["reference_cv"] == pytest.approx(obs["reference_cv"]) and cv.noise["samples"] == 3
    assert 0 < obs["min_s"] <= obs["median_s"]
    assert obs["min_s"] <= obs["mean_s"]
    assert obs["shortest_rep_s"] > 0


@pytest.mark.parametrize(("brick", "repetitions"), [("warp_drive", 5), ("loss", 1)])
def test_brick_cv_rejects_bad_params(brick: str, repetitions: int) -> None:
    with pytest.raises(ValueError):
        brick_cv(brick=brick, repetitions=repetitions, warmup=0)


def test_timer_accounting_matches_the_truth() -> None:
    obs = timer_accounting(**TIMER)
    assert obs["repetitions_timed"] == 4 and obs["calls_per_rep"] >= 2
    assert obs["untimed_calls"] >= 2 and obs["calls_made"] == obs["untimed_calls"] + 4 * obs["calls_per_rep"]
    assert obs["shortest_rep_s"] >= 0.01 and obs["longest_rep_s"] >= obs["shortest_rep_s"]
    assert obs["per_call_max_rel_error"] < 1e-9 and obs["cv_abs_error"] < 1e-9 and obs["cv_expected"] > 0
    assert obs["real_min_per_call_over_cost"] >= 1 and obs["real_calls_per_rep"] >= 2


def test_timer_accounting_sees_the_warmup_fault() -> None:
    with FAULTS.enabled("bricks_warmup_timed"):
        obs = timer_accounting(**TIMER)
    assert obs["repetitions_timed"] == 6  # the 2 warm-up calls counted as repetitions
    assert obs["per_call_max_rel_error"] > 100 and obs["cv_abs_error"] > 1
