"""A median's interval is asked for with a coverage from 0 up to (not including) 1, and is then the
order statistics' interval for it, never inside out."""

from __future__ import annotations

import math

import pytest

from pv.noise import median_interval


@pytest.mark.parametrize("confidence", [-1e-9, -0.5, 1.0, 1.5, math.nan])
def test_a_coverage_outside_zero_to_one_is_refused(confidence: float) -> None:
    with pytest.raises(ValueError, match="at least 0 and below 1"):
        median_interval([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], confidence=confidence)


@pytest.mark.parametrize("n", range(1, 30))
@pytest.mark.parametrize("confidence", [0.0, 1e-9, 0.5, 0.95, 1 - 1e-9])
def test_the_interval_holds_the_median_and_is_never_inside_out(n: int, confidence: float) -> None:
    m = median_interval([float(i) for i in range(n)], confidence=confidence)
    assert m.low <= m.value <= m.high
    # the interval is [x_(k), x_(n+1-k)] for the largest k whose coverage 1 - 2 P(B <= k-1) holds
    k = 1 + sum(
        1 for j in range(1, (n + 1) // 2) if 1 - 2 * sum(math.comb(n, i) for i in range(j + 1)) / 2**n >= confidence
    )
    assert (m.low, m.high) == (float(k - 1), float(n - k))
