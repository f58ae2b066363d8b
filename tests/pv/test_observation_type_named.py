"""An observation that is no JSON value is named by its type's module and name, so a value of a
library type (a Decimal, a Fraction) says where it came from."""

from __future__ import annotations

import decimal
from fractions import Fraction

from pv.run_checker import normalise_observations


def test_a_value_of_a_library_type_is_named_with_its_module() -> None:
    observations, problems, noise = normalise_observations(
        {"x": decimal.Decimal("1.5"), "ratio": Fraction(1, 3)}, ["x", "ratio"]
    )
    assert observations == {} and noise == {}
    assert problems == [
        "observation 'x': a decimal.Decimal is not a JSON scalar or list",
        "observation 'ratio': a fractions.Fraction is not a JSON scalar or list",
    ]
