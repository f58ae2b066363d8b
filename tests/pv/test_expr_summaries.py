"""``Expression.substitute(..., summarise=True)``: which calls show their result (those over a
sequence that evaluate), which keep their arguments' values, with leading whitespace and digits."""

from __future__ import annotations

import pytest

from pv.expr import parse

ENV = {"xs": [1.0, 2.0, 4.0], "ys": [3.0, 5.0], "empty": [], "x": -0.5}


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # a call inside a summarised call is passed over, and a deeper call after it still summarised
        (
            "quantile(xs, len(xs) / 10) < 5 and 1 + 2 * mean(ys) < 9",
            "quantile(xs, len(xs) / 10)(=1.6) < 5 and 1 + 2 * mean(ys)(=4) < 9",
        ),
        # a call over a scalar keeps its argument's value, and a later call over a sequence is summarised
        ("abs(x) < 1 and mean(xs) < 3", "abs(x(=-0.5)) < 1 and mean(xs)(=2.33) < 3"),
        # a call that does not evaluate shows its sequence; the next is still summarised
        ("mean(empty) < 1 and max(xs) < 5", "mean(empty(=())) < 1 and max(xs)(=4) < 5"),
        # leading whitespace is not part of the parsed text: the values land after their names
        ("   mean(xs) < 3 and x < 0", "mean(xs)(=2.33) < 3 and x(=-0.5) < 0"),
    ],
)
def test_summaries_land_after_their_calls(text: str, shown: str) -> None:
    assert parse(text).substitute(ENV, digits=3, summarise=True) == shown


def test_digits_apply_to_summaries() -> None:
    assert parse("mean(xs) < 3").substitute(ENV, summarise=True) == "mean(xs)(=2.3333333333333335) < 3"
