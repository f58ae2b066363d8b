"""A predicate whose value is not true or false is refused with the value it had, and the error
points at the expression it came from (what validate and the report show under a caret)."""

from __future__ import annotations

import pytest

from pv import expr


def test_a_predicate_that_is_a_number_is_refused_with_its_value_and_its_text() -> None:
    with pytest.raises(expr.EvalError) as caught:
        expr.parse("x + 1").holds({"x": 3})
    error = caught.value
    assert error.message == "the expression evaluated to 4, not to true or false"
    assert (error.col, error.text) == (1, "x + 1")
    assert str(error) == "the expression evaluated to 4, not to true or false (column 1)"
