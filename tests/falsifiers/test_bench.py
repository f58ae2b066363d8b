"""The bench checker hands back the engine brick's own figures."""

from __future__ import annotations

import pytest

from falsifiers.bench import brick_cv


def test_brick_cv_reports_the_brick_figures() -> None:
    obs = brick_cv(brick="loss", repetitions=3, warmup=1)
    assert obs["repetitions_timed"] == 3
    assert obs["cv"] >= 0
    assert 0 < obs["min_s"] <= obs["median_s"]
    assert obs["min_s"] <= obs["mean_s"]


@pytest.mark.parametrize(("brick", "repetitions"), [("warp_drive", 5), ("loss", 1)])
def test_brick_cv_rejects_bad_params(brick: str, repetitions: int) -> None:
    with pytest.raises(ValueError):
        brick_cv(brick=brick, repetitions=repetitions, warmup=0)
