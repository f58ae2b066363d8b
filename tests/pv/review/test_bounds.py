"""Which way is better and how much of its limit a value uses, read off the expect."""

from __future__ import annotations

import pytest

from pv.review.bounds import Limit, limit_of
from pv.review.compare import compare_value


@pytest.mark.parametrize(
    ("expect", "limit", "better"),
    [
        ("x <= 3", 3.0, "lower"),
        ("x < 3", 3.0, "lower"),
        ("3 >= x", 3.0, "lower"),
        ("x >= 200000", 200000.0, "higher"),
        ("0.5 < x", 0.5, "higher"),
        ("y == 1 and x <= 0.7 * ln(v)", 0.7 * 2.302585092994046, "lower"),
    ],
)
def test_a_comparison_of_the_observation_alone_is_a_limit(expect: str, limit: float, better: str) -> None:
    found = limit_of(expect, "x", {"v": 10})
    assert found is not None and found.better == better and found.limit == pytest.approx(limit)


@pytest.mark.parametrize("expect", ["abs(x - 3) <= 1", "x == 3", "x <= y", "x in [1, 2]", "not a predicate (", None])
def test_other_shapes_have_no_direction(expect: str | None) -> None:
    assert limit_of(expect, "x", {}) is None


def test_used_is_the_share_of_the_limit() -> None:
    assert Limit("x", 30, "lower").used(79) == pytest.approx(79 / 30)
    assert Limit("x", 200_000, "higher").used(1_000_000) == pytest.approx(0.2)


def _entry(value: float, expect: str = "x <= 10", interval: list[float] | None = None) -> dict[str, object]:
    noise = {"x": {"interval": interval}} if interval else {}
    return {"expect": expect, "params": {}, "observations": {"x": value}, "noise": noise}


def test_a_value_moves_only_beyond_the_noise_or_the_threshold() -> None:
    assert compare_value("x", _entry(5), _entry(5.1), 0.05).moved == ""  # 2 %: under the threshold
    assert compare_value("x", _entry(5), _entry(6), 0.05).moved == "worse"  # toward an upper limit
    assert compare_value("x", _entry(5), _entry(4), 0.05).moved == "better"
    overlapping = compare_value("x", _entry(5, interval=[4, 6]), _entry(6, interval=[5.5, 7]), 0.05)
    assert overlapping.within_noise is True and overlapping.moved == ""
    apart = compare_value("x", _entry(5, interval=[4.9, 5.1]), _entry(6, interval=[5.9, 6.1]), 0.05)
    assert apart.within_noise is False and apart.moved == "worse"
    higher = compare_value("x", _entry(5, "x >= 1"), _entry(6, "x >= 1"), 0.05)
    assert higher.moved == "better" and higher.used == pytest.approx(1 / 6)


def test_a_limit_is_a_finite_number_never_a_flag_a_text_or_an_infinity() -> None:
    params = {"flag": True, "name": "fast", "big": float("inf"), "nan": float("nan"), "n": 3}
    for term in ("flag", "name", "big", "nan"):
        assert limit_of(f"x >= {term}", "x", params) is None, term
    assert limit_of("x >= n", "x", params) == Limit("x", 3.0, "higher")


def test_a_comparison_of_another_shape_is_passed_over_not_the_end_of_the_search() -> None:
    assert limit_of("x == 3 and x >= 2", "x", {}) == Limit("x", 2.0, "higher")
    assert limit_of("1 < x < 5 or 0.5 >= x", "x", {}) == Limit("x", 0.5, "lower")


def test_only_an_expression_has_a_limit_not_a_statement() -> None:
    assert limit_of("assert x >= 1", "x", {}) is None
    assert limit_of("x >= 1\ny <= 2", "x", {}) is None


def test_a_zero_limit_or_a_zero_value_uses_no_share() -> None:
    assert Limit("x", 0.0, "lower").used(1.0) is None
    assert Limit("x", 2.0, "higher").used(0.0) is None
    assert Limit("x", 2.0, "lower").used(1.0) == 0.5
    assert Limit("x", 2.0, "higher").used(4.0) == 0.5
