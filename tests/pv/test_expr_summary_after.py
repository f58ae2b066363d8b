"""A summarised call does not stop the names after it: each name the walk meets after a summarised
sequence, deeper in the expression, still shows its value."""

from __future__ import annotations

from typing import Any

import pytest

from pv.expr import parse


@pytest.mark.parametrize(
    ("text", "env", "shown"),
    [
        ("mean(xs) <= 2 * bound", {"xs": [1.0, 2.0], "bound": 3.0}, "mean(xs)(=1.5) <= 2 * bound(=3.0)"),
        (
            "mean(xs) - 1 <= bound + slack",
            {"xs": [1.0, 2.0], "bound": 3.0, "slack": 0.5},
            "mean(xs)(=1.5) - 1 <= bound(=3.0) + slack(=0.5)",
        ),
    ],
)
def test_names_deeper_than_a_summarised_call_show_their_values(text: str, env: dict[str, Any], shown: str) -> None:
    assert parse(text).substitute(env, summarise=True) == shown
